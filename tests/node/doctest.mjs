#!/usr/bin/env node
/*
 * doctest.mjs - the documentation's command examples as tests
 * (tests/integration/docs.bats runs them against a live server).
 *
 * An example is a ```sh block holding a command and the block that
 * follows it (only blank lines between; ```json, ```text or a plain
 * ```) holding what it prints. A marker, an HTML comment on the line
 * directly above the ```sh fence, says how to compare:
 *
 *   <!-- doctest: exact -->        the output, byte for byte after trailing
 *                                  white space (of each line, and blank
 *                                  lines at the end) is trimmed
 *   <!-- doctest: shape -->        what varies from run to run is compared
 *                                  by its shape only (below)
 *   <!-- doctest: skip REASON -->  not run; REASON says why (required)
 *
 * exact and shape take options, key="value" (or key=value):
 *   server-args="ARGS"  run against a server of its own started with these
 *                       tokstream-fcgi options (as TOKSTREAM_FCGI_ARGS)
 *   loose="K1,K2"       more JSON keys compared by shape only
 *
 * shape, by what the documented output is:
 *   JSON (the whole block parses): the same keys in the same order at
 *     every level, values of the same types, arrays of the same length;
 *     values equal too, except under a loose key: id, created,
 *     created_at, pid, system_fingerprint, total_generated,
 *     total_streams, cached_tokens (it depends on the requests before),
 *     every key ending in _ms, and those of loose="...". A loose string
 *     is compared with each run of digits as one digit ("chatcmpl-1"
 *     matches "chatcmpl-12", not "cmpl-12"); everything below a loose
 *     key is loose.
 *   SSE (a line starts with data: or event:): events (blocks between
 *     blank lines) in the same order, each with the same lines; data
 *     that is JSON compared as JSON above, other data exactly; in an
 *     id: the stream part (all but the key and the index) by shape;
 *     comment-only events (": keep-alive") in the output are dropped.
 *   text (anything else): line by line, every number that stands alone
 *     (not part of a word such as P99) matching any number.
 * In SSE and text, a line "..." in the documented output stands for any
 * number of events (lines).
 *
 * Usage:
 *   doctest.mjs check ROOT        every example of ROOT's README.md and
 *       docs/*.md: a marker that is malformed or above no example, and an
 *       example whose command runs curl, tokbench or tokgen without a
 *       marker, are errors (FILE:LINE: why); exit 1 when there is one.
 *       Prints one line per example: FILE:LINE MODE.
 *   doctest.mjs list ROOT DIR     writes each marked example's command and
 *       output to DIR/N.cmd and DIR/N.out; prints one line per example,
 *       N, FILE:LINE, MODE, SERVER-ARGS, LOOSE separated by
 *       the byte 0x1f (bash read keeps empty fields) (MODE skip:
 *       the reason in the fourth field). Exit 1 on a malformed marker.
 *   doctest.mjs compare MODE LOOSE EXPECTED ACTUAL   exit 0 when ACTUAL
 *       (a file) matches EXPECTED under MODE (exact or shape) and the
 *       comma-separated LOOSE keys; else prints where it differs, exit 1.
 * FILE is relative to ROOT, LINE the line of the ```sh fence.
 */
import fs from 'node:fs';
import path from 'node:path';

const MARKER = /^\s*<!--\s*doctest:(.*?)-->\s*$/;
const OUTPUT_INFO = new Set(['', 'json', 'text']);
const RUNS_SOMETHING = /\b(curl|tokbench|tokgen)\b/;
const LOOSE_KEYS = ['id', 'created', 'created_at', 'pid',
	'system_fingerprint', 'total_generated', 'total_streams',
	'cached_tokens'];

function docFiles(root) {
	const files = [];
	if (fs.existsSync(path.join(root, 'README.md')))
		files.push('README.md');
	const docs = path.join(root, 'docs');
	if (fs.existsSync(docs))
		for (const f of fs.readdirSync(docs).sort())
			if (f.endsWith('.md'))
				files.push('docs/' + f);
	return files;
}

/* The fenced blocks of a Markdown text, indented ones (in a list item)
 * too: {line (1-based, the opening fence), info, body (lines, without
 * the fence's indentation), end (the closing fence's line)}. */
function blocks(lines) {
	const out = [];
	for (let i = 0; i < lines.length; i++) {
		const m = /^( *)(```+|~~~+)\s*([^`\s]*)/.exec(lines[i]);
		if (!m)
			continue;
		const indent = m[1].length, fence = m[2];
		let j = i + 1;
		while (j < lines.length &&
		    !(lines[j].trim().startsWith(fence) &&
		    lines[j].trim().slice(fence.length) === ''))
			j++;
		out.push({ line: i + 1, info: m[3], end: j + 1,
			body: lines.slice(i + 1, j).map(l =>
			    l.slice(Math.min(indent, l.search(/\S|$/)))) });
		i = j;
	}
	return out;
}

/* "exact server-args="--mode echo" loose=a,b" -> {mode, opts} or an
 * error string */
function parseMarker(text) {
	const t = text.trim();
	const m = /^(exact|shape|skip)\b\s*(.*)$/.exec(t);
	if (!m)
		return 'a doctest marker is exact, shape or skip REASON';
	if (m[1] === 'skip') {
		if (m[2] === '')
			return 'doctest: skip needs a reason';
		return { mode: 'skip', reason: m[2], opts: {} };
	}
	const opts = {};
	let rest = m[2];
	while (rest !== '') {
		const o = /^([a-z-]+)=(?:"([^"]*)"|(\S*))\s*/.exec(rest);
		if (!o)
			return `cannot read the marker's options at: ${rest}`;
		if (o[1] !== 'server-args' && o[1] !== 'loose')
			return `unknown doctest option ${o[1]} ` +
			    '(server-args, loose)';
		opts[o[1]] = o[2] !== undefined ? o[2] : o[3];
		rest = rest.slice(o[0].length);
	}
	return { mode: m[1], opts };
}

/* Every example and every problem of ROOT's documentation. */
function scan(root) {
	const examples = [], problems = [];
	for (const file of docFiles(root)) {
		const lines = fs.readFileSync(path.join(root, file), 'utf8')
			.split('\n');
		const bs = blocks(lines);
		const inside = new Set();
		for (const b of bs)
			for (let l = b.line; l <= b.end; l++)
				inside.add(l);
		const used = new Set();
		for (let k = 0; k < bs.length; k++) {
			const b = bs[k];
			if (b.info !== 'sh')
				continue;
			const next = bs[k + 1];
			let out = null;
			if (next && OUTPUT_INFO.has(next.info) &&
			    lines.slice(b.end, next.line - 1)
				.every(l => l.trim() === ''))
				out = next;
			const where = `${file}:${b.line}`;
			const mk = b.line >= 2 ? MARKER.exec(lines[b.line - 2])
			    : null;
			if (!mk) {
				if (out && RUNS_SOMETHING.test(b.body.join('\n')))
					problems.push(`${where}: a command and ` +
					    'its output without a doctest ' +
					    'marker (<!-- doctest: exact|' +
					    'shape|skip REASON --> on the line ' +
					    'above the ```sh)');
				continue;
			}
			used.add(b.line - 1);
			const p = parseMarker(mk[1]);
			if (typeof p === 'string') {
				problems.push(`${file}:${b.line - 1}: ${p}`);
				continue;
			}
			if (!out && p.mode !== 'skip') {
				problems.push(`${where}: a doctest marker, ` +
				    'but no output block follows the command');
				continue;
			}
			examples.push({ where, mode: p.mode, opts: p.opts,
				reason: p.reason || '', cmd: b.body,
				out: out ? out.body : [] });
		}
		lines.forEach((l, i) => {
			if (MARKER.test(l) && !used.has(i + 1) &&
			    !inside.has(i + 1))
				problems.push(`${file}:${i + 1}: a doctest ` +
				    'marker that is not on the line directly ' +
				    'above a ```sh block');
		});
	}
	return { examples, problems };
}

/* ---- comparing ------------------------------------------------------ */

function trimmed(text) {
	const lines = text.split('\n').map(l => l.replace(/\s+$/, ''));
	while (lines.length > 0 && lines[lines.length - 1] === '')
		lines.pop();
	return lines;
}

function kind(v) {
	if (v === null)
		return 'null';
	if (Array.isArray(v))
		return 'array';
	return typeof v;
}

const digits = s => s.replace(/[0-9]+/g, '0');

/* JSON text for messages, with invisible characters (U+2028, a no-break
 * space, ...) escaped so that a difference in one shows */
const show = v => JSON.stringify(v).replace(
    /[\u007f-\u00a0\u00ad\u2000-\u200f\u2028-\u202f\ufeff]/g,
    c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));

/* null when A has E's shape (and E's values where they are not loose);
 * else where and how they differ */
function cmpJSON(e, a, at, loose, looseKeys) {
	const ke = kind(e), ka = kind(a);
	if (ke !== ka)
		return `${at}: expected ${ke} ${show(e)}, got ${ka} ` +
		    show(a);
	if (ke === 'object') {
		const ek = Object.keys(e).join(','), ak = Object.keys(a).join(',');
		if (ek !== ak)
			return `${at}: keys differ:\n  expected ${ek}\n  got      ${ak}`;
		for (const k of Object.keys(e)) {
			const l = loose || looseKeys.has(k) || k.endsWith('_ms');
			const r = cmpJSON(e[k], a[k], `${at}.${k}`, l, looseKeys);
			if (r)
				return r;
		}
		return null;
	}
	if (ke === 'array') {
		if (!loose && e.length !== a.length)
			return `${at}: expected ${e.length} elements, got ${a.length}`;
		for (let i = 0; i < a.length; i++) {
			if (loose && e.length === 0)
				break;
			const r = cmpJSON(loose ? e[Math.min(i, e.length - 1)] :
			    e[i], a[i], `${at}[${i}]`, loose, looseKeys);
			if (r)
				return r;
		}
		return null;
	}
	if (!loose && e !== a)
		return `${at}: expected ${show(e)}, got ` +
		    show(a);
	if (loose && ke === 'string' && digits(e) !== digits(a))
		return `${at}: expected a string like ${show(e)}, ` +
		    `got ${show(a)}`;
	return null;
}

function parseJSON(text) {
	try {
		return { ok: true, v: JSON.parse(text) };
	} catch (err) {
		return { ok: false, err: err.message };
	}
}

/* E and A as sequences; an E item "..." matches any run of A's items.
 * eq(e, a) is null or why they differ. Returns null or the first
 * difference of the longest partial match. */
function matchSeq(E, A, eq, isEllipsis, name) {
	let best = { depth: -1, why: null };
	const memo = new Set();
	function go(i, j) {
		const key = i + ',' + j;
		if (memo.has(key))
			return false;
		memo.add(key);
		if (i === E.length) {
			if (j === A.length)
				return true;
			if (i > best.depth)
				best = { depth: i, why: `${name} ${j + 1} and ` +
				    `after are extra: ${A[j]}` };
			return false;
		}
		if (isEllipsis(E[i])) {
			for (let jj = j; jj <= A.length; jj++)
				if (go(i + 1, jj))
					return true;
			return false;
		}
		if (j === A.length) {
			if (i > best.depth)
				best = { depth: i, why: `expected ${name} ` +
				    `${i + 1} is missing: ${E[i]}` };
			return false;
		}
		const why = eq(E[i], A[j]);
		if (why) {
			if (i > best.depth)
				best = { depth: i, why: `${name} ${j + 1} ` +
				    `(expected ${name} ${i + 1}): ${why}` };
			return false;
		}
		return go(i + 1, j + 1);
	}
	return go(0, 0) ? null : best.why;
}

const NUMBER = /(?<![\w.])-?[0-9]+(\.[0-9]+)?(?![\w.])/g;

function sseEvents(lines) {
	const events = [];
	let cur = [];
	for (const l of lines.concat([''])) {
		if (l !== '') {
			cur.push(l);
			continue;
		}
		if (cur.length > 0 && !cur.every(x => x.startsWith(':')))
			events.push(cur);
		cur = [];
	}
	return events;
}

function sseLine(e, a, looseKeys) {
	const ce = e.indexOf(':'), ca = a.indexOf(':');
	const fe = ce < 0 ? e : e.slice(0, ce);
	const fa = ca < 0 ? a : a.slice(0, ca);
	if (fe !== fa)
		return `expected field ${fe}, got ${a}`;
	const ve = e.slice(ce + 1).replace(/^ /, '');
	const va = a.slice(ca + 1).replace(/^ /, '');
	if (fe === 'id') {
		const pe = ve.split('-'), pa = va.split('-');
		if (pe.length !== pa.length ||
		    pe.slice(-2).join('-') !== pa.slice(-2).join('-') ||
		    digits(pe.slice(0, -2).join('-')) !==
		    digits(pa.slice(0, -2).join('-')))
			return `expected an id like ${ve}, got ${va}`;
		return null;
	}
	if (fe === 'data') {
		const je = parseJSON(ve);
		if (je.ok && /^[{[]/.test(ve)) {
			const ja = parseJSON(va);
			if (!ja.ok)
				return `expected JSON data, got ${va}`;
			return cmpJSON(je.v, ja.v, 'data', false, looseKeys);
		}
	}
	return ve === va ? null : `expected ${e}, got ${a}`;
}

function compare(mode, looseList, expected, actual) {
	const E = trimmed(expected), A = trimmed(actual);
	const looseKeys = new Set(LOOSE_KEYS.concat(
	    looseList.split(',').filter(k => k !== '')));
	if (mode === 'exact')
		return matchSeq(E, A, (e, a) => e === a ? null :
		    `expected ${show(e)}, got ${show(a)}`,
		    () => false, 'line');
	if (mode !== 'shape')
		throw new Error(`unknown mode ${mode}`);
	const je = parseJSON(E.join('\n'));
	if (je.ok && /^[{[]/.test(E.join('\n').trim())) {
		const ja = parseJSON(A.join('\n'));
		if (!ja.ok)
			return `expected JSON, got text that is not (${ja.err})`;
		return cmpJSON(je.v, ja.v, '$', false, looseKeys);
	}
	if (E.some(l => /^(data|event):/.test(l))) {
		const ee = sseEvents(E), ea = sseEvents(A);
		return matchSeq(ee, ea, (e, a) => {
			if (e.length !== a.length)
				return `expected ${e.length} lines, got ` +
				    `${a.length}: ${a.join(' | ')}`;
			for (let i = 0; i < e.length; i++) {
				const r = sseLine(e[i], a[i], looseKeys);
				if (r)
					return r;
			}
			return null;
		}, e => e.length === 1 && e[0] === '...', 'event');
	}
	return matchSeq(E, A, (e, a) =>
	    e.replace(NUMBER, '#') === a.replace(NUMBER, '#') ? null :
	    `expected a line like ${show(e)}, got ` +
	    show(a), e => e === '...', 'line');
}

/* ---- links ---------------------------------------------------------- */

/*
 * GitHub's anchor of a heading (its github-slugger): lower case, every
 * character that is not a letter, a digit, a space, '-' or '_' dropped,
 * spaces to '-'; a repeated heading gets -1, -2, ...
 */
function anchors(text) {
	const seen = new Map(), out = new Set();
	let fence = false;
	for (const line of text.split('\n')) {
		if (/^```/.test(line))
			fence = !fence;
		const m = !fence && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
		if (!m)
			continue;
		let a = m[1].toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '')
		    .replace(/ /g, '-');
		const n = seen.get(a) || 0;
		seen.set(a, n + 1);
		out.add(n === 0 ? a : `${a}-${n}`);
	}
	for (const m of text.matchAll(/<a (?:name|id)="([^"]+)"/g))
		out.add(m[1]);
	return out;
}

/*
 * Every relative link of README.md and docs/*.md, [text](target) outside
 * fenced code: its file exists (under ROOT) and its #anchor, when it has
 * one, is a heading of that file. Returns the problems, "file:line: ...".
 */
function checkLinks(root) {
	const files = ['README.md', ...fs.readdirSync(path.join(root, 'docs'))
	    .filter(f => f.endsWith('.md')).sort().map(f => `docs/${f}`)];
	const cache = new Map(), problems = [];
	const anchorsOf = f => {
		if (!cache.has(f))
			cache.set(f, anchors(fs.readFileSync(f, 'utf8')));
		return cache.get(f);
	};
	for (const rel of files) {
		const file = path.join(root, rel);
		let fence = false;
		fs.readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
			if (/^```/.test(line))
				fence = !fence;
			if (fence)
				return;
			const code = line.replace(/`[^`]*`/g, '');
			for (const m of code.matchAll(/\]\(([^)\s]+)\)/g)) {
				const t = m[1];
				if (/^[a-z]+:/i.test(t))
					continue;       /* http:, mailto: */
				const [p, frag] = t.split('#');
				const target = p === '' ? file :
				    path.resolve(path.dirname(file), p);
				const where = `${rel}:${i + 1}`;
				if (!fs.existsSync(target)) {
					problems.push(`${where}: ${t}: no such file`);
					continue;
				}
				if (frag !== undefined && target.endsWith('.md') &&
				    !anchorsOf(target).has(frag))
					problems.push(`${where}: ${t}: no heading ` +
					    `#${frag} in ${path.relative(root, target)}`);
			}
		});
	}
	return problems;
}

/* ---- main ----------------------------------------------------------- */

function usage() {
	process.stderr.write('usage: doctest.mjs check ROOT | links ROOT |' +
	    ' list ROOT DIR | compare exact|shape LOOSE EXPECTED ACTUAL\n');
	process.exit(2);
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'check' && args.length === 1) {
	const { examples, problems } = scan(args[0]);
	for (const x of examples)
		console.log(`${x.where} ${x.mode}`);
	for (const p of problems)
		console.log(`ERROR ${p}`);
	console.log(`${examples.length} examples, ${problems.length} errors`);
	process.exit(problems.length > 0 ? 1 : 0);
} else if (cmd === 'links' && args.length === 1) {
	const problems = checkLinks(args[0]);
	for (const p of problems)
		console.log(`ERROR ${p}`);
	console.log(`${problems.length} broken links`);
	process.exit(problems.length > 0 ? 1 : 0);
} else if (cmd === 'list' && args.length === 2) {
	const { examples, problems } = scan(args[0]);
	const bad = problems.filter(p => !/without a doctest marker/.test(p));
	for (const p of bad)
		process.stderr.write(`${p}\n`);
	examples.forEach((x, n) => {
		fs.writeFileSync(path.join(args[1], `${n + 1}.cmd`),
		    x.cmd.join('\n') + '\n');
		fs.writeFileSync(path.join(args[1], `${n + 1}.out`),
		    x.out.join('\n') + '\n');
		const f = x.mode === 'skip' ? [x.reason, ''] :
		    [x.opts['server-args'] || '', x.opts.loose || ''];
		console.log([n + 1, x.where, x.mode, ...f].join('\x1f'));
	});
	process.exit(bad.length > 0 ? 1 : 0);
} else if (cmd === 'compare' && args.length === 4) {
	const why = compare(args[0], args[1], fs.readFileSync(args[2], 'utf8'),
	    fs.readFileSync(args[3], 'utf8'));
	if (why) {
		console.log(why);
		process.exit(1);
	}
} else {
	usage();
}
