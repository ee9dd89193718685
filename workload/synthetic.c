/*
 * Synthetic prompts: words drawn from a built-in vocabulary chosen so that word count approximates token count.
 * Every entry is a plain, common lowercase English word that GPT-family BPE vocabularies (GPT-2's, cl100k,
 * o200k, and Llama 3's, which derives from them) hold as a single token with its leading space (" the",
 * " house", " water"). BPE pre-tokenisation splits text at spaces before merging, so each " word" is encoded on
 * its own and n words are close to n tokens; only the first word lacks its space.
 */
#include "sg_workload.h"

#include <stdlib.h>
#include <string.h>

/* Our own list; no word repeats (tests check), none longer than a handful of letters. */
static const char *const vocab[] = {
    "the",       "of",       "and",        "to",       "in",       "is",       "that",      "for",     "it",
    "as",        "was",      "with",       "be",       "by",       "on",       "not",       "he",      "this",
    "are",       "or",       "his",        "from",     "at",       "which",    "but",       "have",    "an",
    "had",       "they",     "you",        "were",     "their",    "one",      "all",       "we",      "can",
    "her",       "has",      "there",      "been",     "if",       "more",     "when",      "will",    "would",
    "who",       "so",       "no",         "she",      "other",    "its",      "time",      "into",    "only",
    "two",       "may",      "some",       "new",      "could",    "these",    "than",      "any",     "first",
    "then",      "like",     "our",        "over",     "such",     "most",     "after",     "also",    "made",
    "many",      "before",   "must",       "through",  "back",     "years",    "where",     "much",    "your",
    "way",       "down",     "should",     "because",  "long",     "each",     "well",      "people",  "state",
    "make",      "even",     "good",       "very",     "just",     "those",    "how",       "both",    "life",
    "still",     "while",    "being",      "under",    "day",      "another",  "last",      "three",   "same",
    "world",     "might",    "own",        "great",    "house",    "take",     "place",     "around",  "water",
    "against",   "right",    "small",      "part",     "case",     "little",   "high",      "during",  "again",
    "home",      "point",    "school",     "since",    "number",   "among",    "local",     "system",  "end",
    "group",     "fact",     "always",     "city",     "side",     "until",    "work",      "family",  "far",
    "given",     "often",    "course",     "become",   "early",    "away",     "power",     "night",   "less",
    "second",    "public",   "later",      "country",  "several",  "thing",    "form",      "large",   "government",
    "between",   "next",     "within",     "along",    "known",    "enough",   "whole",     "better",  "sure",
    "nothing",   "example",  "hand",       "rather",   "want",     "mind",     "left",      "level",   "above",
    "across",    "act",      "add",        "age",      "ago",      "air",      "almost",    "already", "although",
    "am",        "answer",   "area",       "arm",      "art",      "ask",      "bad",       "bank",    "base",
    "bed",       "began",    "begin",      "behind",   "believe",  "below",    "best",      "big",     "bit",
    "black",     "blue",     "board",      "body",     "book",     "born",     "bring",     "brought", "build",
    "built",     "business", "buy",        "call",     "came",     "car",      "care",      "carry",   "cause",
    "center",    "certain",  "change",     "child",    "children", "church",   "class",     "clear",   "close",
    "cold",      "color",    "come",       "common",   "company",  "control",  "cost",      "cover",   "cut",
    "dark",      "data",     "deal",       "death",    "decide",   "deep",     "develop",   "did",     "die",
    "different", "does",     "dog",        "done",     "door",     "draw",     "dream",     "drive",   "easy",
    "eat",       "economic", "education",  "effect",   "eight",    "either",   "else",      "energy",  "enjoy",
    "enter",     "ever",     "every",      "eye",      "face",     "factor",   "fall",      "father",  "fear",
    "feel",      "few",      "field",      "fight",    "figure",   "fill",     "film",      "final",   "find",
    "fine",      "fire",     "five",       "floor",    "fly",      "follow",   "food",      "foot",    "force",
    "free",      "friend",   "front",      "full",     "fun",      "game",     "garden",    "gave",    "general",
    "get",       "girl",     "give",       "glass",    "go",       "gold",     "gone",      "green",   "ground",
    "grow",      "guess",    "hair",       "half",     "happen",   "happy",    "hard",      "head",    "health",
    "hear",      "heart",    "heat",       "held",     "help",     "here",     "hit",       "hold",    "hope",
    "horse",     "hot",      "hour",       "huge",     "human",    "idea",     "important", "include", "increase",
    "inside",    "interest", "island",     "issue",    "job",      "join",     "keep",      "kept",    "key",
    "kid",       "kind",     "king",       "know",     "land",     "language", "late",      "laugh",   "law",
    "lay",       "lead",     "learn",      "leave",    "let",      "letter",   "light",     "line",    "list",
    "listen",    "live",     "lost",       "lot",      "love",     "low",      "main",      "major",   "man",
    "market",    "matter",   "mean",       "meet",     "member",   "men",      "middle",    "million", "minute",
    "miss",      "model",    "moment",     "money",    "month",    "morning",  "mother",    "move",    "music",
    "name",      "national", "nature",     "near",     "need",     "never",    "news",      "nice",    "north",
    "note",      "now",      "off",        "office",   "oil",      "old",      "once",      "open",    "order",
    "out",       "paper",    "parent",     "party",    "pass",     "past",     "pay",       "peace",   "period",
    "person",    "pick",     "picture",    "piece",    "plan",     "plant",    "play",      "police",  "poor",
    "position",  "possible", "pretty",     "price",    "private",  "problem",  "process",   "program", "provide",
    "pull",      "put",      "question",   "quick",    "quite",    "rain",     "reach",     "read",    "ready",
    "real",      "reason",   "red",        "remember", "report",   "rest",     "result",    "return",  "river",
    "road",      "rock",     "room",       "round",    "rule",     "run",      "safe",      "said",    "saw",
    "say",       "sea",      "season",     "seat",     "see",      "seem",     "sell",      "send",    "sense",
    "serve",     "set",      "seven",      "shall",    "share",    "ship",     "short",     "show",    "simple",
    "sing",      "sit",      "six",        "size",     "sleep",    "slow",     "social",    "soft",    "son",
    "song",      "soon",     "sound",      "south",    "space",    "speak",    "special",   "spring",  "stand",
    "star",      "start",    "stay",       "step",     "stop",     "story",    "street",    "strong",  "student",
    "study",     "style",    "summer",     "sun",      "support",  "table",    "talk",      "tax",     "team",
    "tell",      "ten",      "test",       "thank",    "think",    "third",    "though",    "thought", "thousand",
    "today",     "together", "told",       "took",     "top",      "total",    "town",      "tree",    "true",
    "try",       "turn",     "understand", "unit",     "up",       "upon",     "use",       "usually", "value",
    "view",      "voice",    "wait",       "walk",     "wall",     "war",      "warm",      "watch",   "wear",
    "week",      "weight",   "west",       "white",    "why",      "wide",     "wife",      "win",     "wind",
    "window",    "winter",   "wish",       "woman",    "women",    "wonder",   "word",      "worker",  "write",
    "wrong",     "yard",     "year",       "yes",      "yet",      "young",
};

#define VOCAB_LEN SG_ARRAY_LEN(vocab)
#define PREFIX_WORDS 3 /* index words at the start of a prompt: 3 give vocab^3 (> 10^8) distinct prompts */

size_t sg_vocab_size(void)
{
    return VOCAB_LEN;
}

const char *sg_vocab_word(size_t i)
{
    return i < VOCAB_LEN ? vocab[i] : NULL;
}

/* A text under construction; grows by doubling so no word-length bound has to be kept in sync with the list. */
typedef struct {
    char *buf;
    size_t len, cap;
} text_t;

static bool text_init(text_t *t, uint32_t n_words)
{
    t->len = 0;
    t->cap = (size_t)n_words * 7 + 16; /* the list averages under 6 letters plus a space */
    t->buf = malloc(t->cap);
    return t->buf != NULL;
}

static bool text_word(text_t *t, const char *w)
{
    size_t wl = strlen(w);
    if (t->len + wl + 2 > t->cap) {
        size_t cap = t->cap * 2 + wl + 2;
        char *b = realloc(t->buf, cap);
        if (!b)
            return false;
        t->buf = b;
        t->cap = cap;
    }
    if (t->len)
        t->buf[t->len++] = ' ';
    memcpy(t->buf + t->len, w, wl);
    t->len += wl;
    return true;
}

static char *text_done(text_t *t, bool ok)
{
    if (!ok) {
        free(t->buf);
        return NULL;
    }
    t->buf[t->len] = '\0';
    return t->buf;
}

static const char *random_word(sg_rng_t *rng)
{
    /* modulo bias is VOCAB_LEN / 2^64: nothing */
    return vocab[sg_rng_next(rng) % VOCAB_LEN];
}

char *sg_synth_text(sg_rng_t *rng, uint32_t n_words)
{
    text_t t;
    if (!text_init(&t, n_words))
        return NULL;
    bool ok = true;
    for (uint32_t i = 0; i < n_words && ok; i++)
        ok = text_word(&t, random_word(rng));
    return text_done(&t, ok);
}

char *sg_synth_prompt(sg_rng_t *rng, uint32_t n_words, uint64_t index)
{
    /* as many base-VOCAB_LEN digits as index needs, at least PREFIX_WORDS, so the width is the same for all
     * prompts of any realistic table and two indexes never spell the same prefix */
    uint32_t digits = 1;
    for (uint64_t v = index / VOCAB_LEN; v; v /= VOCAB_LEN)
        digits++;
    if (digits < PREFIX_WORDS)
        digits = PREFIX_WORDS;
    text_t t;
    if (!text_init(&t, n_words))
        return NULL;
    bool ok = true;
    uint64_t rest = index;
    uint32_t i = 0;
    for (; i < n_words && i < digits && ok; i++) {
        ok = text_word(&t, vocab[rest % VOCAB_LEN]);
        rest /= VOCAB_LEN;
    }
    for (; i < n_words && ok; i++)
        ok = text_word(&t, random_word(rng));
    return text_done(&t, ok);
}

uint64_t sg_count_words(const char *s, size_t len)
{
    uint64_t n = 0;
    bool in_word = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
        if (!space && !in_word)
            n++;
        in_word = !space;
    }
    return n;
}
