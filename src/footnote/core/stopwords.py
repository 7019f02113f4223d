"""Stop words: the words a keyword search skips, and the words that carry no claim.

There are two lists because they answer two questions, and each is tuned to its own scorer:

- `QUERY_STOP_WORDS` are the English function words that match nearly every chunk and only
  dilute BM25. Keyword search drops them from a query. The list is short on purpose: a word
  such as "about", "source" or "document" still tells one chunk from another, and dropping it
  would change what search ranks first (the SciFact figures are measured with this list).
- `CLAIM_STOP_WORDS` are the words that do not make a sentence true or false: every query stop
  word, more function words, and the words answers use to talk about their sources
  ("according", "passage", "mentioned"). Citation checking and evidence selection compare
  what is left.

The claim list is written as the query list plus its own words, so the two cannot drift apart
on the words they share. The same holds for Chinese: `CHINESE_QUERY_STOP_WORDS` are question
and function words a query drops; `CJK_CLAIM_STOP_CHARS` are the function characters whose
bigrams say nothing about a claim.
"""

from __future__ import annotations

QUERY_STOP_WORDS = frozenset(
    """a an and are as at be but by can did do does for from had has have how i if in into is it its
    of on or so than that the their them then there these they this to was were what when where which
    who whom why will with would you your""".split()
)

_MORE_CLAIM_STOP_WORDS = """about above after again against all also am any because been before
    being below between both could doing done down during each either else ever few further having he
    her here hers herself him himself his however itself just may me might more most much must my
    myself neither no nor not now off once one only other our ours ourselves out over own same shall
    she should some such theirs themselves those through thus too under until up upon very we while whose
    within without yet yours yourself yourselves
    according answer answers certainly document documents indeed mentioned okay ok passage passages
    provided question sure source sources stated thank thanks yes"""
CLAIM_STOP_WORDS = QUERY_STOP_WORDS | frozenset(_MORE_CLAIM_STOP_WORDS.split())

# A question's 哪些 or 多少 is not what its answer says.
CHINESE_QUERY_STOP_WORDS = frozenset(
    """的 了 吗 呢 吧 啊 是 在 和 与 及 或 有 什么 哪些 哪个 哪里 哪 多少 几 谁 是谁 怎么 怎样 如何
    为什么 为何 何时""".split()
)
CJK_CLAIM_STOP_CHARS = frozenset("的了是在和与及也都而就着或之其这那个们为被把从对于以有中上下")
