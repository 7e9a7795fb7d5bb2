/*
 * words.c - the words of random prompts (words.h): every text token of
 * the simulator's vocabulary (src/sim/vocab_table.c, kind SIM_K_WORD)
 * that is one space and 2 to 5 lower-case ASCII letters, in the table's
 * order. tests/unit/test_load_workload.c checks that each is one token of
 * the simulator's tokenizer and that the table still matches the
 * vocabulary, so a change there is noticed here.
 */
#include "bench/words.h"

#include <stdint.h>
#include <string.h>

/* The table is laid out by a script, as many words a line as fit. */
/* clang-format off */
const char *const load_words[] = {
	" the", " of", " and", " to", " in", " is", " that", " for", " it",
	" as", " was", " with", " be", " by", " on", " not", " he", " this",
	" are", " or", " his", " from", " at", " which", " but", " have",
	" an", " they", " you", " were", " her", " she", " there", " one",
	" all", " we", " their", " has", " been", " if", " more", " when",
	" will", " would", " who", " so", " no", " can", " said", " what",
	" out", " up", " its", " about", " into", " than", " them", " only",
	" other", " new", " some", " could", " time", " these", " two",
	" may", " then", " do", " first", " any", " my", " now", " such",
	" like", " our", " over", " me", " even", " most", " made", " after",
	" also", " did", " many", " must", " back", " years", " where",
	" much", " your", " way", " well", " down", " each", " just",
	" those", " how", " too", " state", " good", " very", " make",
	" world", " still", " own", " see", " men", " work", " long", " get",
	" here", " both", " life", " being", " under", " never", " day",
	" same", " know", " while", " last", " might", " us", " great",
	" old", " year", " off", " come", " since", " go", " came", " right",
	" used", " take", " three", " few", " house", " use", " again",
	" place", " home", " small", " found", " went", " say", " part",
	" once", " high", " upon", " every", " does", " got", " left",
	" until", " away", " fact", " water", " less", " put", " think",
	" hand", " far", " took", " head", " yet", " set", " told", " night",
	" end", " why", " eyes", " find", " going", " look", " asked",
	" later", " knew", " point", " next", " city", " give", " group",
	" young", " days", " let", " room", " side", " given", " order",
	" face", " per", " among", " form", " often", " early", " white",
	" case", " large", " big", " need", " four", " felt", " along",
	" saw", " best", " ever", " least", " power", " light", " thing",
	" want", " mind", " area", " done", " open", " kind", " began",
	" door", " thus", " help", " sense", " means", " whole", " times",
	" law", " human", " line", " above", " name", " hands", " local",
	" show", " five", " gave", " today", " act", " feet", " taken",
	" past", " quite", " seen", " death", " body", " word", " half",
	" week", " field", " car", " words", " tell", " shall", " money",
	" held", " keep", " sure", " free", " seems", " real", " air",
	" whose", " major", " heard", " study", " ago", " known", " south",
	" board", " job", " areas", " west", " close", " turn", " love",
	" true", " court", " force", " full", " seem", " front", " hello",
	" model", " token", " text", " data", " event", " byte", " bytes",
	" queue", " slot", " cache", " input", " batch", " error", " code",
	" value", " test", " tests", " limit", " size", " file", " files",
	" lines", " user", " users", " layer", " seed", " key", " keys",
	" table", " index", " query", " path", " route", " frame", " chunk",
	" timer", " clock", " rate", " load", " peak", " tail", " cost",
	" price", " disk", " log", " logs", " trace", " alert", " flag",
	" flags", " patch", " build", " emoji", " quote", " quick", " slow",
	" fast", " tiny", " huge", " late", " clear", " dark", " warm",
	" cold", " quiet", " loud", " weak", " happy", " calm", " busy",
	" ready", " fair", " safe", " wild", " rare", " plain", " final",
	" total", " near", " deep", " soft", " hard", " rough", " sharp",
	" heavy", " empty", " fresh", " stale", " raw", " pure", " run",
	" runs", " ran", " read", " reads", " write", " wrote", " send",
	" sends", " sent", " call", " calls", " start", " stop", " stops",
	" wait", " waits", " begin", " ends", " ended", " opens", " move",
	" moves", " moved", " hold", " holds", " keeps", " kept", " built",
	" check", " count", " print", " parse", " store", " loads", " save",
	" saves", " saved", " learn", " grow", " grows", " grew", " carry",
	" river", " road", " ocean", " sea", " sky", " cloud", " rain",
	" snow", " wind", " sun", " moon", " star", " stars", " tree",
	" trees", " bird", " birds", " dog", " cat", " horse", " fish",
	" book", " books", " paper", " story", " song", " music", " voice",
	" color", " chair", " tea", " bread", " apple", " train", " child",
	" team", " game", " idea", " ideas", " plan", " plans", " map",
	" soon", " apart", " below", " ahead", " steps", " step", " issue",
	" goal", " goals", " cause", " sign", " signs", " piece", " parts",
	" edge", " edges", " level", " stage", " phase", " round", " loop",
	" loops", " cycle", " draft", " note", " notes", " page", " pages",
	" list", " lists", " item", " items", " entry", " array", " type",
	" types", " class", " block", " image", " video", " audio", " sound",
	" noise", " wave", " waves", " pulse", " beat", " beats", " chord",
};
/* clang-format on */

const size_t load_nwords = sizeof(load_words) / sizeof(load_words[0]);

enum ts_err
load_words_append(struct rng *r, long n, struct ts_buf *b)
{
	long i;

	for (i = 0; i < n; i++) {
		const char *w = load_words[rng_bounded(r,
		    (uint32_t)load_nwords)];

		if (ts_buf_append(b, w, strlen(w)) != TS_OK)
			return TS_ELIMIT;
	}
	return TS_OK;
}
