"""Search: text to terms, the in-memory index and its scoring, the on-disk index cache.

Modules: `tokens` (stemmed words for Latin text, bigrams for CJK; the stemmer
is `porter2`), `scoring` (the BM25F formula: a memory's fields, terms and
weights), `index` (the in-memory index, kept live), `query` (the query path:
a query's terms, weights, filters and factors, then its hits), `ranking` (the
exact top of the scores: the hot path, no I/O; `dense` the same sums with numpy
when a process has it), `building` (a cold build of a large folder, compact),
`packed` (what the index reads from the cache and gives it: packed ids,
columns, postings), `cache` (the cache file in the state folder, validated
against the folder), `loading` (how a store's index comes to be: from the
cache and what changed, or by a build). The optional
semantic signal (`pip install ".[semantic]"` from a checkout): `embedder` (the model
interface and its backends), `vectors` (the vector file in the state folder),
`semantic` (a folder's vectors, made in the background or by `embed`) and
`fusion` (lexical and semantic rankings fused); none is imported on a hook's
own path.

May import `sage_mem.errors`, `sage_mem.memory` and (`cache`, `loading`) `sage_mem.disk`;
never the store or an interface.
"""

# The most files a store that may not build (a hook) reads directly: about a
# millisecond each, so a prompt never waits for more than a few dozen of them. Here,
# not in `loading`, so that a sync can compare what it pulled without importing a search.
HOOK_READS = 64
