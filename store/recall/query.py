"""Reading a query: its words, as every keyword search (indexed or in memory) sees them."""

from __future__ import annotations

import re

# Shorter prefixes expand to thousands of terms (a 3-letter prefix took 605 ms p95 for an FTS5
# top-10 over 100k rows on a 2-core machine); from four letters the expansion is small and needs
# no prefix index.
MIN_PREFIX = 4
WORD_PATTERN = re.compile(r"\w+", re.UNICODE)
# Words so common they only make FTS slow (tens of thousands of matches) and rankings noisy.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "too",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


def query_terms(query: str) -> list[str]:
    words = [w.lower() for w in WORD_PATTERN.findall(query)]
    kept = [w for w in words if w not in STOPWORDS]
    return kept or words
