#!/usr/bin/env python3
"""Fails when a C++ function or file under the given folders is too long.

A file counts all its lines. A function counts from the first line of its
signature to its closing brace: free functions, member functions defined
in or out of a class, constructors; a lambda counts in the function that
holds it. The scan is for clang-formatted sources: it skips comments,
strings and preprocessor lines, and tells a function body from a
namespace, a class or an initializer by what comes before its '{'.

  size_check.py --root=<tree> [--max-function-lines=N] [--max-file-lines=N]
                FOLDER...

Prints one line per violation (and the largest function and file seen),
exits 1 on any. Python standard library only.
"""

import argparse
import os
import re
import sys

SOURCE_SUFFIXES = ('.h', '.cc')
CONTROL = re.compile(r'^(if|for|while|switch|catch|do|else|try)\b')
TYPE_KEY = re.compile(r'\b(class|struct|union|enum)\b')
QUALIFIERS = re.compile(
    r'(\s*\b(const|override|final|noexcept|mutable|volatile)\b)+\s*$')
ACCESS = re.compile(r'^(public|private|protected)\s*:\s*')
ACCESS_LABEL = re.compile(r'\s*(public|private|protected)\s*:')


def strip_code(text):
    """Returns `text` with comments, string and character literals and
    preprocessor lines blanked (newlines kept, so lines still count)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == '#':
            # A preprocessor line, with its continuations.
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out.append('\n')
                    i += 2
                    continue
                i += 1
            continue
        if c == '/' and text.startswith('//', i):
            while i < n and text[i] != '\n':
                i += 1
            continue
        if c == '/' and text.startswith('/*', i):
            end = text.find('*/', i + 2)
            end = n if end < 0 else end + 2
            out.append('\n' * text.count('\n', i, end))
            i = end
            continue
        if c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if m:
                close = ')' + m.group(1) + '"'
                end = text.find(close, i + m.end())
                end = n if end < 0 else end + len(close)
                out.append('""' + '\n' * text.count('\n', i, end))
                i = end
                continue
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        if c == '\n':
            line_start = True
        elif not c.isspace():
            line_start = False
        i += 1
    return ''.join(out)


def strip_template(h):
    """`h` without a leading "template <...>" (its brackets balanced), so
    that "template <class T>" does not read as a class."""
    while h.startswith('template'):
        i = h.find('<')
        if i < 0:
            return h
        depth = 0
        for j in range(i, len(h)):
            depth += {'<': 1, '>': -1}.get(h[j], 0)
            if depth == 0:
                h = h[j + 1:].lstrip()
                break
        else:
            return h
    return h


def classify(header):
    """What a '{' opens, from the code since the previous ';', '{' or '}'."""
    h = strip_template(ACCESS.sub('', ' '.join(header.split())))
    if not h or h.endswith('=') or h.endswith(',') or h.endswith('('):
        return 'other'
    if h.startswith('namespace') or h.startswith('extern'):
        return 'namespace'
    if CONTROL.match(h):
        return 'other'
    paren = h.find('(')
    if TYPE_KEY.search(h if paren < 0 else h[:paren]):
        return 'class'
    body = QUALIFIERS.sub('', h)
    body = re.sub(r'\s*->\s*[\w:<>,\s*&]+$', '', body)  # trailing return
    if body.endswith(')') and paren >= 0:
        return 'function'
    return 'other'


def functions(path):
    """Yields (name, first line, last line) of each function in `path`."""
    with open(path, encoding='utf-8') as f:
        code = strip_code(f.read())
    stack = []  # (kind, start line, name)
    header = []
    header_line = None
    line = 1
    for c in code:
        if c == '\n':
            line += 1
            if header:
                header.append(' ')
            continue
        in_function = any(kind == 'function' for kind, _, _ in stack)
        if c == '{':
            if in_function:
                kind, start, name = 'block', line, ''
            else:
                text = ''.join(header)
                kind = classify(text)
                start = header_line or line
                m = re.search(r'([\w:~]+(?:operator\W+)?)\s*\(',
                              strip_template(' '.join(text.split())))
                name = m.group(1) if m else '?'
            stack.append((kind, start, name))
            header, header_line = [], None
        elif c == '}':
            if stack:
                kind, start, name = stack.pop()
                if kind == 'function':
                    yield name, start, line
            header, header_line = [], None
        elif c == ';' and not in_function:
            header, header_line = [], None
        elif not in_function:
            if not c.isspace() and header_line is None:
                header_line = line
            header.append(c)
            if c == ':' and ACCESS_LABEL.fullmatch(''.join(header)):
                header, header_line = [], None  # "public:" starts no code


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--root', required=True)
    parser.add_argument('--max-function-lines', type=int, default=120)
    parser.add_argument('--max-file-lines', type=int, default=500)
    parser.add_argument('folders', nargs='+')
    args = parser.parse_args()

    violations = []
    largest_function = (0, '')
    largest_file = (0, '')
    checked = 0
    for folder in args.folders:
        top = os.path.join(args.root, folder)
        for dirpath, _, names in sorted(os.walk(top)):
            for name in sorted(names):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, args.root)
                checked += 1
                with open(path, encoding='utf-8') as f:
                    lines = f.read().count('\n')
                largest_file = max(largest_file, (lines, rel))
                if lines > args.max_file_lines:
                    violations.append(f'{rel}: {lines} lines (file limit '
                                      f'{args.max_file_lines})')
                for fn, first, last in functions(path):
                    size = last - first + 1
                    where = f'{rel}:{first} {fn}'
                    largest_function = max(largest_function, (size, where))
                    if size > args.max_function_lines:
                        violations.append(
                            f'{where}: {size} lines (function limit '
                            f'{args.max_function_lines})')
    if checked == 0:
        print(f'size_check: no sources under {args.folders}')
        return 1
    print(f'size_check: {checked} files; largest function '
          f'{largest_function[1]} ({largest_function[0]} lines), largest '
          f'file {largest_file[1]} ({largest_file[0]} lines)')
    for v in violations:
        print(f'  {v}')
    return 1 if violations else 0


if __name__ == '__main__':
    sys.exit(main())
