#!/usr/bin/env node
/*
 * demo-browser.mjs BASE SCREENSHOT - the browser demo (etc/www/index.html,
 * served by lighttpd at /) in a real headless Chromium (Debian's
 * /usr/bin/chromium or CHROMIUM), driven by the npm "playwright-core"
 * package. Checks that
 *   - the page loads from BASE with no request to any other origin and
 *     no error in the console;
 *   - EventSource on /stream: the tokens appear one by one, in order,
 *     exactly /stream's tokens for the same prompt (fetched here), spread
 *     over time as they were generated (not all at once), and the page
 *     closes the EventSource at [DONE] (no second request for it);
 *   - fetch on /v1/chat/completions: the text is the non-stream answer's;
 *   - Stop, in both modes, cancels the generation: /_debug/generated for
 *     the page's X-Request-Id says cancelled with generated <= received
 *     + 3, and the page shows those numbers;
 *   - TTFT and the ITL chart show numbers.
 * Leaves a PNG screenshot of the page after a Stop at SCREENSHOT. Prints
 * one line per failure and exits 1, or exits 0.
 */
import { chromium } from 'playwright-core';

const base = (process.argv[2] || process.env.BASE || '').replace(/\/$/, '');
const shot = process.argv[3] || process.env.DEMO_SCREENSHOT;
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const failures = [];
const notes = [];

function check(ok, what) {
	if (!ok)
		failures.push(what);
	return ok;
}

const show = (v) => JSON.stringify(v);

async function getJson(path, init) {
	const res = await fetch(base + path, init);
	return res.json();
}

/* /stream's tokens for a request, read here with fetch */
async function streamTokens(prompt, maxTokens) {
	const q = new URLSearchParams({ prompt, max_tokens: String(maxTokens) });
	const text = await (await fetch(`${base}/stream?${q}`)).text();
	return text.split('\n').filter((l) => l.startsWith('data: {"token"'))
	    .map((l) => JSON.parse(l.slice(6)).token);
}

async function debugWhenDone(id) {
	let d;
	for (let i = 0; i < 250; i++) {
		d = await getJson(`/_debug/generated?id=${id}`);
		if (d.status !== 'running')
			return d;
		await new Promise((r) => setTimeout(r, 20));
	}
	return d;
}

/* fills the form and presses Start */
async function startRun(page, { prompt, mode, maxTokens, tpot }) {
	await page.fill('#prompt', prompt);
	await page.selectOption('#mode', mode);
	await page.fill('#max-tokens', String(maxTokens));
	await page.fill('#tpot', tpot === undefined ? '' : String(tpot));
	await page.click('#start');
}

/* the page's tokens (one span each) and its run state */
function pageRun(page) {
	return page.evaluate(() => ({
		spans: [...document.querySelectorAll('#out .tok')]
		    .map((s) => s.textContent),
		state: document.body.dataset.state,
		id: window.tsDemo?.id ?? null,
		arrivals: window.tsDemo?.arrivals ?? [],
		ttft: document.getElementById('ttft').textContent,
		itlP50: document.getElementById('itl-p50').textContent,
		received: document.getElementById('received').textContent,
	}));
}

/*
 * Stop after `after` tokens; checks the server stopped too. The page
 * counts chunks: a /v1 token whose text is held back (part of a split
 * character) sends none, so the chat prompt is one whose first 40 tokens
 * have none (tokgen --chat --json shows them as "").
 */
async function stopCase(page, mode, prompt, after) {
	await startRun(page, { prompt, mode, maxTokens: 400, tpot: 40 });
	await page.waitForFunction((n) => (window.tsDemo?.tokens.length ?? 0)
	    >= n, after, { timeout: 10000 });
	await page.click('#stop');
	await page.waitForSelector('#report[data-generated]',
	    { timeout: 10000 });
	const r = await page.evaluate(() => ({
		received: Number(document.getElementById('report').dataset
		    .received),
		generated: Number(document.getElementById('report').dataset
		    .generated),
		status: document.getElementById('report').dataset.status,
		id: window.tsDemo.id,
		state: document.body.dataset.state,
		line: document.getElementById('report-line').textContent,
		shown: document.querySelectorAll('#out .tok').length,
	}));
	const d = await debugWhenDone(r.id);
	notes.push(`${mode}: stopped after ${r.received} received, server ` +
	    `generated ${d.generated} (${d.status}, ${d.cancel_cause})`);
	check(r.state === 'stopped' && r.shown === r.received,
	    `${mode} stop: page state ${r.state}, ${r.shown} shown, ` +
	    `${r.received} received`);
	check(d.status === 'cancelled' && d.finish_reason === 'abort' &&
	    d.generated <= r.received + 3 && d.generated >= r.received,
	    `${mode} stop: received ${r.received}, /_debug/generated?id=` +
	    `${r.id} ${show(d)}`);
	check(r.status === 'cancelled' && r.generated === d.generated &&
	    /generation stopped/.test(r.line), `${mode} stop: the page ` +
	    `reports ${show(r)}`);
	return r;
}

async function main() {
	const browser = await chromium.launch({ executablePath,
	    args: ['--disable-dev-shm-usage'] });
	try {
		const page = await browser.newPage({ viewport:
		    { width: 1000, height: 900 } });
		const foreign = [];
		const streams = [];
		page.on('request', (req) => {
			if (!req.url().startsWith(base + '/') &&
			    !req.url().startsWith('data:'))
				foreign.push(req.url());
			if (new URL(req.url()).pathname === '/stream')
				streams.push(req.url());
		});
		page.on('console', (msg) => {
			if (msg.type() === 'error')
				failures.push(`console error: ${msg.text()}`);
		});
		page.on('pageerror', (err) => failures.push(`page error: ${err}`));

		const res = await page.goto(`${base}/`);
		check(res.status() === 200 && /text\/html/.test(
		    res.headers()['content-type']), `GET /: ${res.status()} ` +
		    res.headers()['content-type']);
		check(/tokstream/.test(await page.title()), 'title');

		/* EventSource on /stream: order, and spread over time */
		const n = 30;
		const want = await streamTokens('hello browser', n);
		streams.length = 0;
		await startRun(page, { prompt: 'hello browser', mode: 'stream',
		    maxTokens: n, tpot: 30 });
		await page.waitForFunction(() => document.body.dataset.state !==
		    'waiting' && document.body.dataset.state !== 'streaming',
		    null, { timeout: 10000 });
		const a = await pageRun(page);
		check(a.state === 'done', `stream: state ${a.state}`);
		check(show(a.spans) === show(want), `stream: tokens differ from ` +
		    `/stream's:\n  page   ${show(a.spans)}\n  stream ${show(want)}`);
		const spread = a.arrivals[a.arrivals.length - 1] - a.arrivals[0];
		check(a.arrivals.length === n && spread >= (n - 1) * 30 * 0.6,
		    `stream: ${a.arrivals.length} tokens arrived within ` +
		    `${spread} ms, want about ${(n - 1) * 30} (not buffered)`);
		check(Number(a.ttft) > 0 && Number(a.itlP50) >= 15,
		    `stream: TTFT ${a.ttft}, ITL p50 ${a.itlP50}`);
		await page.waitForSelector('#report[data-generated]');
		const dr = await getJson(`/_debug/generated?id=${a.id}`);
		check(dr.status === 'done' && dr.generated === n,
		    `stream: /_debug/generated ${show(dr)}`);
		/* closed at [DONE]: no reconnect within a retry interval */
		await page.waitForTimeout(1300);
		check(streams.length === 1, `stream: ${streams.length} requests ` +
		    `for /stream, want 1 (EventSource closed at [DONE])`);

		/* fetch on /v1/chat/completions */
		const whole = await getJson('/v1/chat/completions', {
		    method: 'POST', headers: { 'Content-Type':
		    'application/json' }, body: JSON.stringify({
		    model: 'tokstream-sim', max_tokens: 40, messages: [{
		    role: 'user', content: 'hello chat' }] }) });
		await startRun(page, { prompt: 'hello chat', mode: 'chat',
		    maxTokens: 40, tpot: 10 });
		await page.waitForFunction(() => document.body.dataset.state ===
		    'done' || document.body.dataset.state === 'error', null,
		    { timeout: 10000 });
		const c = await pageRun(page);
		check(c.state === 'done' && c.spans.join('') ===
		    whole.choices[0].message.content, `chat: state ${c.state}, ` +
		    `text ${show(c.spans.join(''))}, want ` +
		    show(whole.choices[0].message.content));
		check(/^[1-9][0-9]*$/.test(c.id ?? ''), `chat: X-Request-Id ` +
		    `${c.id}`);

		/* Stop, both ways; the screenshot after the EventSource one */
		await stopCase(page, 'chat', 'stop me', 8);
		await stopCase(page, 'stream', 'stop me (stream)', 25);
		if (shot)
			await page.screenshot({ path: shot, fullPage: true });
		check(foreign.length === 0, `requests to other origins: ` +
		    show(foreign));
	} finally {
		await browser.close();
	}
	if (failures.length > 0) {
		for (const f of failures)
			console.log(`FAIL: ${f}`);
		for (const l of notes)
			console.log(`  ${l}`);
		process.exit(1);
	}
	for (const l of notes)
		console.log(l);
	console.log(`ok: Chromium ${executablePath}${shot ? `, screenshot ` +
	    shot : ''}`);
}

if (!/^https?:\/\/[^/]+$/.test(base)) {
	console.log('usage: demo-browser.mjs BASE [SCREENSHOT.png]');
	process.exit(2);
}
main().catch((err) => {
	console.log(`FAIL: exception: ${err?.stack || err}`);
	for (const f of failures)
		console.log(`FAIL: ${f}`);
	process.exit(1);
});
