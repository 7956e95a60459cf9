#!/usr/bin/env python3
"""Checks the project's Markdown documentation (python3 standard library only).

  docs_check.py --root=SOURCE_DIR [--w4jit=PATH_TO_W4JIT_BINARY]

(a) Every relative link and image in README.md and docs/**/*.md resolves to
    a file or folder inside the repository, and a `#fragment` to a heading
    of the target Markdown file (GitHub's heading ids). Links to http(s) and
    mailto are not followed.
(b) README.md is at most 400 lines.
(c) Every line of a ```sh block in README.md is a valid invocation: a
    `scripts/...` command names an executable script of the repository; a
    `.../w4jit <subcommand> ...` command uses a subcommand that
    `w4jit --help` lists and only options that `w4jit <subcommand> --help`
    mentions. Other programs must be on PATH. In docs/**/*.md, ```sh lines
    that run `scripts/...` or `w4jit` are checked the same way (other lines
    there may need a build or a venv and are left alone). A subcommand that
    lists commands of its own (`w4jit bench`'s jobs) must be given one, and
    the options are those of `w4jit bench <job> --help`; the records of past
    runs under docs/performance/ may keep the old spelling without a job.
(d) No document mentions a path into the workspace outside the repository
    (`../shared`), which a user's clone does not have.

The help output is parsed loosely so that any option parser's layout
works: subcommands are the words that start indented lines of
`w4jit --help`; options are every `--name` anywhere in the subcommand's
`--help` output (stdout and stderr; the exit status is ignored, as some
flag libraries exit non-zero after printing help). A `--noname` option is
accepted when `--name` is listed (boolean flags of abseil).

Without --w4jit the w4jit part of (c) is skipped, and says so.
Exit status 0 when everything holds, 1 with one line per problem.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import unicodedata

README_MAX_LINES = 400

FENCE_RE = re.compile(r"^\s*(```|~~~)")
HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE_RE = re.compile(r"(`+)(.+?)\1")
LINK_RE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF_RE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_ID_RE = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
OUTSIDE_RE = re.compile(r"\.\./shared\b")
COUNTS = {"links": 0, "commands": 0}
# Records of past runs: the commands as they were run then (an old spelling
# of `w4jit bench` without a job is left alone there).
RECORDS = os.path.join("docs", "performance") + os.sep


def markdown_files(root):
    files = [os.path.join(root, "README.md")]
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, "docs")):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".md"):
                files.append(os.path.join(dirpath, name))
    return files


def split_fences(lines):
    """Yields (line_number, line, fence_info or None) for every line; the
    fence info is the code block's language for lines inside a block and
    None outside (fence lines themselves are reported as inside)."""
    info = None
    for number, line in enumerate(lines, 1):
        m = FENCE_RE.match(line)
        if m:
            if info is None:
                info = line.strip()[3:].strip().split(" ")[0] or "plain"
                yield number, line, info
                continue
            yield number, line, info
            info = None
            continue
        yield number, line, info


def github_slug(text):
    """The id GitHub gives a heading (before de-duplication)."""
    text = INLINE_CODE_RE.sub(lambda m: m.group(2), text)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # link -> its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_" or cat[0] in "LN" or cat == "Mn":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


_anchor_cache = {}


def anchors_of(path):
    if path in _anchor_cache:
        return _anchor_cache[path]
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    seen = {}
    anchors = set()
    for _, line, info in split_fences(lines):
        if info is not None:
            continue
        for m in HTML_ID_RE.finditer(line):
            anchors.add(m.group(1))
        m = HEADING_RE.match(line)
        if not m:
            continue
        slug = github_slug(m.group(2))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    _anchor_cache[path] = anchors
    return anchors


def links_in(lines):
    """(line_number, target) of every link outside code."""
    for number, line, info in split_fences(lines):
        if info is not None:
            continue
        text = INLINE_CODE_RE.sub("code", line)
        for m in LINK_RE.finditer(text):
            yield number, m.group(1)
        m = REF_DEF_RE.match(text)
        if m:
            yield number, m.group(1)


def check_links(root, path, lines, problems):
    rel = os.path.relpath(path, root)
    root_real = os.path.realpath(root)
    for number, target in links_in(lines):
        COUNTS["links"] += 1
        where = f"{rel}:{number}"
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            if not re.match(r"^(https?|mailto):", target):
                problems.append(f"{where}: link {target!r} uses a scheme "
                                "that is not http(s) or mailto")
            continue
        file_part, _, fragment = target.partition("#")
        if file_part.startswith("/"):
            problems.append(f"{where}: link {target!r} is absolute; links "
                            "must be relative to the file")
            continue
        if file_part:
            dest = os.path.normpath(os.path.join(os.path.dirname(path),
                                                 file_part))
        else:
            dest = path
        dest_real = os.path.realpath(dest)
        if os.path.commonpath([root_real, dest_real]) != root_real:
            problems.append(f"{where}: link {target!r} points outside the "
                            "repository")
            continue
        if not os.path.exists(dest):
            problems.append(f"{where}: link {target!r}: "
                            f"{os.path.relpath(dest, root)} does not exist")
            continue
        if fragment:
            if not dest.endswith(".md") or os.path.isdir(dest):
                problems.append(f"{where}: link {target!r} has an anchor "
                                "but its target is not a Markdown file")
                continue
            if fragment not in anchors_of(dest):
                problems.append(f"{where}: link {target!r}: no heading "
                                f"with id #{fragment} in "
                                f"{os.path.relpath(dest, root)}")


def check_outside_mentions(root, path, lines, problems):
    rel = os.path.relpath(path, root)
    for number, line in enumerate(lines, 1):
        if OUTSIDE_RE.search(line):
            problems.append(f"{rel}:{number}: mentions '../shared', a "
                            "folder outside the repository")


class W4jitHelp:
    """Subcommands and options as the binary's --help describes them."""

    def __init__(self, binary):
        self.binary = binary
        self._options = {}
        self._jobs = {}
        self.subcommands = self._commands(self._help([]))

    @staticmethod
    def _commands(text):
        """The words that start indented lines of a --help text (before its
        options: the commands it lists)."""
        names = set()
        for line in text.split("\n"):
            if line.startswith("options:"):
                break
            m = re.match(r"^\s+([a-z][a-z0-9_-]*)(?=\s|,|$)", line)
            if m:
                names.add(m.group(1))
        return names

    def _help(self, args):
        out = subprocess.run([self.binary] + args + ["--help"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=60, check=False)
        return out.stdout.decode("utf-8", "replace")

    def options(self, *command):
        """The options `w4jit <command...> --help` lists."""
        if command not in self._options:
            text = self._help(list(command))
            self._options[command] = set(
                re.findall(r"--[a-zA-Z][a-zA-Z0-9_-]*", text))
        return self._options[command]

    def jobs(self, subcommand):
        """The commands a subcommand lists (`w4jit bench`'s jobs), or none."""
        if subcommand not in self._jobs:
            self._jobs[subcommand] = self._commands(self._help([subcommand]))
        return self._jobs[subcommand]


def shell_commands(line):
    """Each simple command of a shell line, as a list of words (comments,
    pipes, `&&`, `;` and redirections split it)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = list(lexer)
    command = []
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        if word in ("|", "||", "&&", ";", "&"):
            if command:
                yield command
            command = []
        elif word in (">", ">>", "<", "2>", "&>"):
            skip_next = True
        else:
            command.append(word)
    if command:
        yield command


def check_command(root, where, words, help_, strict, problems, notes,
                  records=False):
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]  # environment assignments
    if not words:
        return
    program = words[0]
    if program.startswith("scripts/"):
        script = os.path.join(root, program)
        if not os.path.isfile(script):
            problems.append(f"{where}: {program} does not exist")
        elif not os.access(script, os.X_OK):
            problems.append(f"{where}: {program} is not executable")
        return
    if program == "w4jit" or program.endswith("/w4jit"):
        if help_ is None:
            notes.add("w4jit commands not checked: no --w4jit binary given")
            return
        if len(words) < 2 or words[1].startswith("-"):
            for option in words[1:]:
                if option.startswith("--") and option != "--help":
                    problems.append(f"{where}: w4jit takes {option} only "
                                    "after a subcommand")
            return
        sub = words[1]
        if sub not in help_.subcommands:
            problems.append(f"{where}: `w4jit {sub}` is not a subcommand "
                            "`w4jit --help` lists "
                            f"({', '.join(sorted(help_.subcommands))})")
            return
        command = [sub]
        jobs = help_.jobs(sub)
        if jobs:
            job = words[2] if len(words) > 2 else ""
            if job not in jobs:
                if job != "--help" and not records:
                    problems.append(
                        f"{where}: `w4jit {sub}` takes a job first "
                        f"({', '.join(sorted(jobs))}), not `{job}`")
                return
            command.append(job)
        known = help_.options(*command)
        name_of = " ".join(command)
        for word in words[len(command) + 1:]:
            if not word.startswith("--"):
                continue
            name = word.split("=", 1)[0]
            if name in known or name == "--help":
                continue
            if name.startswith("--no") and "--" + name[4:] in known:
                continue
            problems.append(f"{where}: `w4jit {name_of}` has no option {name} "
                            f"(not in `w4jit {name_of} --help`)")
        return
    if strict and shutil.which(program) is None:
        problems.append(f"{where}: {program} is neither a script of the "
                        "repository, w4jit, nor a program on PATH")


def check_commands(root, path, lines, help_, strict, problems, notes):
    rel = os.path.relpath(path, root)
    for number, line, info in split_fences(lines):
        if info != "sh" or FENCE_RE.match(line):
            continue
        where = f"{rel}:{number}"
        try:
            commands = list(shell_commands(line))
        except ValueError as e:
            problems.append(f"{where}: cannot parse as a shell line ({e})")
            continue
        for words in commands:
            COUNTS["commands"] += 1
            check_command(root, where, words, help_, strict, problems, notes,
                          records=rel.startswith(RECORDS))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True,
                        help="the repository's root folder")
    parser.add_argument("--w4jit", help="the built w4jit binary")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    help_ = None
    if args.w4jit:
        if not os.access(args.w4jit, os.X_OK):
            print(f"docs_check: --w4jit={args.w4jit} is not an executable")
            return 1
        help_ = W4jitHelp(args.w4jit)
        if not help_.subcommands:
            print(f"docs_check: `{args.w4jit} --help` lists no subcommands")
            return 1

    problems = []
    notes = set()
    files = markdown_files(root)
    for path in files:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        is_readme = path == files[0]
        if is_readme and len(lines) > README_MAX_LINES:
            problems.append(f"README.md: {len(lines)} lines, more than "
                            f"{README_MAX_LINES}")
        check_links(root, path, lines, problems)
        check_outside_mentions(root, path, lines, problems)
        check_commands(root, path, lines, help_, is_readme, problems, notes)

    for note in sorted(notes):
        print(f"docs_check: {note}")
    for problem in problems:
        print(problem)
    print(f"docs_check: {len(files)} files, {COUNTS['links']} links, "
          f"{COUNTS['commands']} sh commands, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
