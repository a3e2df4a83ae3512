"""Recall: query parsing, keyword and vector search, fusion, and the recall service."""
