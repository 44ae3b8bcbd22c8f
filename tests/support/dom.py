"""A small DOM for tests: parse HTML (e.g. a browser's --dump-dom) into elements to query."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = {"meta", "link", "br", "hr", "img", "input", "col", "area", "base", "embed", "source", "track", "wbr"}
# Elements whose start closes an open one (HTML's optional end tags): the nearest open element
# of the listed kinds, unless one of the barrier elements comes first.
_AUTO_CLOSE = {
    "tr": ({"tr"}, {"table", "tbody", "thead"}),
    "td": ({"td", "th"}, {"tr", "table"}),
    "th": ({"td", "th"}, {"tr", "table"}),
    "li": ({"li"}, {"ul", "ol"}),
    "p": ({"p"}, {"div", "body"}),
}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)
    parent: Element | None = None

    def iter(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter()

    def find_all(self, test: Callable[[Element], bool]) -> list[Element]:
        return [e for e in self.iter() if test(e)]

    def select(self, tag: str | None = None, **attrs: str | None) -> list[Element]:
        """Elements by tag and attributes (``class_`` for class; value None: the attribute is present)."""

        def ok(e: Element) -> bool:
            if tag is not None and e.tag != tag:
                return False
            for key, value in attrs.items():
                name = key.rstrip("_").replace("_", "-")
                if name not in e.attrs:
                    return False
                if value is not None and (
                    value not in e.attrs[name].split() if name == "class" else e.attrs[name] != value
                ):
                    return False
            return True

        return self.find_all(ok)

    def one(self, tag: str | None = None, **attrs: str | None) -> Element:
        found = self.select(tag, **attrs)
        assert len(found) == 1, f"expected one <{tag}> with {attrs}, found {len(found)}"
        return found[0]

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    def own_text(self) -> str:
        """Text without that of <title> children (an SVG tooltip)."""
        return "".join(c if isinstance(c, str) else ("" if c.tag == "title" else c.own_text()) for c in self.children)


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        closes, barriers = _AUTO_CLOSE.get(tag, (set(), set()))
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag in closes:
                del self.stack[i:]
                break
            if self.stack[i].tag in barriers:
                break
        el = Element(tag, {k: v or "" for k, v in attrs}, parent=self.stack[-1])
        self.stack[-1].children.append(el)
        if tag not in _VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}, parent=self.stack[-1]))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root
