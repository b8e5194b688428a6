"""Reports: a self-contained HTML page and a Markdown summary of one or more runs."""

from benchbed.report.render import write_report

__all__ = ["write_report"]
