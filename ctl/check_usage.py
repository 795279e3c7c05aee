#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# check_usage.py MAGLBCTL SOURCE_ROOT: maglbctl's usage text has one source,
# `maglbctl --help`; its copies must say the same:
#   ctl/README.md           the block under "## Usage", byte for byte;
#   README.md               its maglbctl paragraph: the synopsis, and each
#                           command's first word;
#   packaging/man/maglbctl.8 the SYNOPSIS, the OPTIONS and the COMMANDS, in
#                           order, as troff renders them (case, '-' for
#                           '_' and font changes aside).
# Prints what differs and exits 1; 0 when every copy agrees.
import re
import subprocess
import sys


def usage_sections(text):
    """The synopsis (its lines joined), the command and option syntaxes."""
    lines = text.splitlines()
    synopsis = []
    for line in lines:
        if not line.strip():
            break
        synopsis.append(line.strip())
    synopsis = " ".join(synopsis)
    assert synopsis.startswith("usage: "), synopsis
    sections = {}
    current = None
    for line in lines:
        if line.endswith(":") and not line.startswith(" "):
            current = sections.setdefault(line[:-1], [])
        elif not line.strip():
            current = None
        elif current is not None and re.match(r"  \S", line):
            # the syntax ends where the description's column starts
            current.append(re.split(r"\s{2,}", line.strip())[0])
    return synopsis[len("usage: "):], sections.get("commands", []), sections.get("options", [])


def troff_words(args):
    """A macro line's arguments, double quotes grouping as troff does."""
    return [m.group(1) if m.group(1) is not None else m.group(2)
            for m in re.finditer(r'"((?:[^"]|"")*)"|(\S+)', args)]


def troff_text(line):
    """What a troff line prints, roughly: fonts and macros dropped."""
    m = re.match(r"\.(B|I|BR|RB|BI|IB|IR|RI)\s+(.*)", line)
    if m:
        words = troff_words(m.group(2))
        line = ("" if len(m.group(1)) == 2 else " ").join(words)
    line = re.sub(r"\\f[BIRP]", "", line)
    line = line.replace("\\-", "-").replace("\\(em", "-").replace("\\ ", " ")
    return " ".join(line.split())


def man_sections(man):
    """The man page's SYNOPSIS as one line, and each section's .TP heads."""
    sections, name, after_tp = {}, None, False
    for line in man.splitlines():
        if line.startswith(".SH "):
            name = line[4:].strip().strip('"')
            sections[name] = []
        elif line.startswith(".TP"):
            after_tp = True
        elif name is not None:
            if after_tp:
                sections[name].append(troff_text(line))
                after_tp = False
            elif name == "SYNOPSIS":
                sections[name].append(troff_text(line))
    sections["SYNOPSIS"] = [" ".join(sections.get("SYNOPSIS", []))]
    return sections


def same(a, b):
    def norm(s):
        return " ".join(s.lower().replace("_", "-").split())
    return norm(a) == norm(b)


def compare(what, want, got, errors):
    if len(want) != len(got) or not all(same(a, b) for a, b in zip(want, got)):
        errors.append(f"{what} differs from maglbctl --help:\n"
                      f"  --help: {want}\n  there:  {got}")


def readme_usage_block(readme):
    m = re.search(r"^## Usage\n\n```\n(.*?)^```$", readme, re.M | re.S)
    return m.group(1) if m else None


def main():
    maglbctl, root = sys.argv[1], sys.argv[2]
    help_text = subprocess.run([maglbctl, "--help"], check=True, capture_output=True,
                               text=True).stdout
    synopsis, commands, options = usage_sections(help_text)
    errors = []
    if not commands or not options:
        errors.append("maglbctl --help: no commands: or options: section")

    with open(f"{root}/ctl/README.md") as f:
        block = readme_usage_block(f.read())
    if block != help_text:
        errors.append("ctl/README.md: the block under '## Usage' is not maglbctl --help")

    with open(f"{root}/README.md") as f:
        m = re.search(r"^### maglbctl\n(.*?)^#", f.read(), re.M | re.S)
    paragraph = " ".join(m.group(1).split()) if m else ""
    if f"`{synopsis}`" not in paragraph:
        errors.append(f"README.md: the maglbctl paragraph lacks `{synopsis}`")
    for word in sorted({c.split()[0] for c in commands}):
        if f"`{word}" not in paragraph:
            errors.append(f"README.md: the maglbctl paragraph does not name `{word}`")

    with open(f"{root}/packaging/man/maglbctl.8") as f:
        man = man_sections(f.read())
    compare("maglbctl.8 SYNOPSIS", [synopsis],
            man.get("SYNOPSIS", []), errors)
    compare("maglbctl.8 OPTIONS", options, man.get("OPTIONS", []), errors)
    compare("maglbctl.8 COMMANDS", commands, man.get("COMMANDS", []), errors)

    for e in errors:
        print(e)
    print(f"{len(commands)} commands, {len(options)} options: "
          f"{'copies differ' if errors else 'every copy agrees'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
