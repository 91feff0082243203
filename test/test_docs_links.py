"""The documentation names only what exists: every relative link of README.md and docs/*.md (and the heading
an anchor names), and every repository path the pages write in backticks, so that a rename or a removal
has to update the pages that point at it. Reads the source tree beside this directory; needs no device."""
import itertools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
# A backticked word is taken for a repository path when it starts with one of these folders.
TOP_LEVEL = ("runtime", "aten", "fallback", "kernels_cl", "python", "scripts", "bench", "test", "examples",
             "docs", "cmake", ".ci")
# Shorter spellings the pages use, and where they live.
PREFIXES = {"_inductor": "python/torch_opencl/_inductor"}
# A bare file name (no folder) is looked up in these folders.
BARE_DIRS = (".", "test", "bench", "scripts", "kernels_cl", "python/torch_opencl", "python/torch_opencl/_inductor",
             "aten/native", "aten/kernel_support", "aten", "runtime", "examples", "docs", "cmake")
BARE_SUFFIXES = (".py", ".cl", ".sh", ".md", ".cmake")

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`]+)`")  # a span may wrap onto the next line
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation (backticks, dots, colons) dropped, spaces to
    hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set:
    text = FENCE.sub("", page.read_text())
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*?)\s*$", text, re.M)}


def _expand_braces(word: str) -> list:
    """runtime/kernel_forms.{h,cpp} -> runtime/kernel_forms.h, runtime/kernel_forms.cpp"""
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    return list(itertools.chain.from_iterable(
        _expand_braces(word[:m.start()] + alt + word[m.end():]) for alt in m.group(1).split(",")))


def _path_words(span: str):
    """The words of a code span that name repository files: a path, or a command's arguments."""
    for token in span.split():
        token = token.strip("'\"(),;:")
        if not token or any(c in token for c in "<>*$~=") or token.startswith(("-", "/", "http")):
            continue
        for word in _expand_braces(token):
            head = word.split("/", 1)[0]
            if head in TOP_LEVEL:
                yield word
            elif head in PREFIXES and "/" in word:
                yield PREFIXES[head] + "/" + word.split("/", 1)[1]
            elif "/" not in word and word.endswith(BARE_SUFFIXES) and not word.startswith("."):
                yield "bare:" + word


def _problems(page: Path) -> list:
    text = page.read_text()
    found = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            found.append(f"link ({target}): {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest} does not exist")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            found.append(f"link ({target}): no heading of {dest.name} has the anchor #{anchor}")
    for span in CODE_SPAN.findall(FENCE.sub("", text)):
        span = " ".join(span.split())
        for word in _path_words(span):
            if word.startswith("bare:"):
                name = word[5:]
                if not any((ROOT / d / name).exists() for d in BARE_DIRS):
                    found.append(f"`{span}`: no file {name} in {', '.join(BARE_DIRS)}")
            elif not (ROOT / word.rstrip("/")).exists():
                found.append(f"`{span}`: {word} does not exist")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_names_only_what_exists(page):
    problems = _problems(page)
    assert not problems, f"{page.relative_to(ROOT)} names what does not exist:\n  " + "\n  ".join(problems)


def test_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move detail into docs/ (at most 250)"


def test_checker_finds_what_is_missing(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[a](missing.md) `scripts/no_such_script.sh --flag` `kernels_cl/{gemm,no_such}.cl` "
                    "`bash scripts/test.sh\n  no_such_test.py` [b](#nowhere)\n# A heading\n")
    problems = _problems(page)
    assert any("missing.md" in p for p in problems)
    assert any("scripts/no_such_script.sh" in p for p in problems)
    assert any("kernels_cl/no_such.cl" in p for p in problems)
    assert not any("kernels_cl/gemm.cl" in p for p in problems)
    assert any("no_such_test.py" in p for p in problems)
    assert any("#nowhere" in p for p in problems)
    page.write_text("[c](#a-heading) `scripts/wheel.sh`\n# A heading\n")
    assert _problems(page) == []
