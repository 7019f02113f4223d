"""The bottom layer: domain types and text primitives that every other part of footnote shares.

Nothing here imports any other part of footnote (errors excepted), so any part may import it:
the document and chunk types (`document`), the character span they cite by (`span`), a search
hit (`hits`), search filters (`filters`), the CJK character classes (`cjk`), language detection
(`language`), sentence boundaries (`sentences`), stop words (`stopwords`), percentiles (`stats`)
and the vector type (`vectors`).
"""
