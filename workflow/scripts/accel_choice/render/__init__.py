"""Rendering records for people: REPORT.md, the comparison, figures."""
