#!/usr/bin/env python3
"""Read a DOM that headless Chromium dumped (--dump-dom) for the browse
pages of `packwire serve` (t-serve-browse.sh) and print facts about it, one
per line, for the test to check:

  tags <tag>... every element name found (sorted, unique)
  handlers N    attributes that would run script (on*, javascript: URLs)
  rows CLASS N  <tr> elements of a table of that class (repos, refs, log)
  text ...      the page's text, one cell or block per line
  link HREF     every <a href>

Usage: dom-check.py DOM_FILE
"""
import sys
from html.parser import HTMLParser


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.handlers, self.links = set(), 0, []
        self.rows, self.tables, self.text, self.cur = {}, [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        for k, v in attrs:
            if k.startswith("on") or (v or "").strip().lower().startswith("javascript:"):
                self.handlers += 1
            if tag == "a" and k == "href":
                self.links.append(v)
        if tag == "table":
            self.tables.append(dict(attrs).get("class", ""))
        if tag == "tr" and self.tables:
            self.rows[self.tables[-1]] = self.rows.get(self.tables[-1], 0) + 1
        if tag in ("td", "th", "p", "h1", "h2", "title", "tr", "code", "a", "span", "footer"):
            self.flush()

    def handle_endtag(self, tag):
        if tag == "table" and self.tables:
            self.tables.pop()
        self.flush()

    def handle_data(self, data):
        self.cur.append(data)

    def flush(self):
        t = "".join(self.cur).strip()
        if t:
            self.text.append(t)
        self.cur = []


p = Page()
with open(sys.argv[1], encoding="utf-8", errors="strict") as f:
    p.feed(f.read())
p.flush()
out = sys.stdout
out.write("tags " + " ".join(sorted(p.tags)) + "\n")
out.write("handlers %d\n" % p.handlers)
for k, v in sorted(p.rows.items()):
    out.write("rows %s %d\n" % (k, v))
for l in p.links:
    out.write("link %s\n" % l)
for t in p.text:
    out.write("text " + t.replace("\n", " ") + "\n")
