"""Destructive commands in text an agent is about to run: a shell line, SQL, a tool's
arguments.

    find_destructive("cd /srv && rm -rf ./build")   →  [CommandMatch("delete_recursive", …)]

Each pattern names what the command would destroy, not the tool that runs it, and reads
the command the way a shell or a database would: flags in any order and grouping
(``rm -fr``, ``rm -r -f``, ``rm --recursive --force``), any case for SQL keywords, a path
or a table after the verb. What is only *read* (``ls``, ``SELECT``, ``git status``) and
what deletes one named file (``rm notes.txt``) is not destructive here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CommandMatch:
    #: what the command destroys: delete_recursive, disk_overwrite, …
    kind: str
    start: int
    end: int


# a command word stands alone: "rm" but not "perform", "halt" but not "asphalt"
_START = r"(?<![\w./-])"

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, flags))
    for kind, pattern, flags in (
        (
            "delete_recursive",
            _START + r"rm\s+(?:-{1,2}[\w-]+\s+)*-(?:[a-zA-Z]*[rR][a-zA-Z]*)\b(?:\s+-{1,2}[\w-]+)*"
            r"|rm\s+(?:-{1,2}[\w-]+\s+)*--recursive\b",
            0,
        ),
        ("delete_recursive", r"\bRemove-Item\b[^\n]*-Recurse\b", re.IGNORECASE),
        ("delete_recursive", r"\b(?:rd|rmdir|del)\s+(?:/[a-z]\s+)*/s\b", re.IGNORECASE),
        ("delete_recursive", r"\bfind\s+[^\n;|]*\s-delete\b", 0),
        ("delete_recursive", r"\bshutil\.rmtree\s*\(", 0),
        ("disk_overwrite", r"\b(?:mkfs(?:\.\w+)?|wipefs|shred|fdisk|parted)\s+[^\n]*?/dev/\w+", 0),
        ("disk_overwrite", r"\bdd\s+[^\n]*\bof=/dev/\w+", 0),
        ("disk_overwrite", r">\s*/dev/(?:sd[a-z]|nvme\d|hd[a-z]|xvd[a-z]|disk\d)", 0),
        ("disk_overwrite", r"\bformat\s+[a-z]:", re.IGNORECASE),
        ("fork_bomb", r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:", 0),
        ("permissions", r"\bchmod\s+(?:-\w+\s+)*-[a-zA-Z]*R[a-zA-Z]*\s+(?:0?777|a\+rwx)\s+/", 0),
        ("permissions", r"\bchown\s+(?:-\w+\s+)*-[a-zA-Z]*R[a-zA-Z]*\s+\S+\s+/(?:\s|$)", 0),
        ("shutdown", _START + r"(?:shutdown|poweroff|halt|reboot|init\s+[06])\b", 0),
        ("drop_data", r"\bDROP\s+(?:TABLE|DATABASE|SCHEMA|INDEX|COLLECTION)\b", re.IGNORECASE),
        ("drop_data", r"\bTRUNCATE\s+(?:TABLE\s+)?[\w.\"`]+", re.IGNORECASE),
        # DELETE without a WHERE before the statement ends
        ("drop_data", r"\bDELETE\s+FROM\s+[\w.\"`]+\s*(?:;|$|\"|')", re.IGNORECASE),
        ("drop_data", r"\b(?:FLUSHALL|FLUSHDB)\b|\bdropDatabase\s*\(", 0),
        (
            "history_rewrite",
            r"\bgit\s+push\s+(?:[^\n;|&]*\s)?(?:--force\b|-f\b|--force-with-lease\b)",
            0,
        ),
        ("history_rewrite", r"\bgit\s+(?:reset\s+--hard|clean\s+-[a-zA-Z]*[fdx][a-zA-Z]*)", 0),
        ("infrastructure", r"\bkubectl\s+delete\b|\bterraform\s+destroy\b|\bhelm\s+uninstall\b", 0),
        ("infrastructure", r"\baws\s+s3\s+(?:rb|rm)\b[^\n]*--recursive|\bgsutil\s+rm\s+-r", 0),
        ("crontab", r"\bcrontab\s+-r\b", 0),
        ("remote_script", r"\b(?:curl|wget)\s+[^\n|]*\|\s*(?:sudo\s+)?(?:ba|z)?sh\b", 0),
    )
)


def find_destructive(text: str) -> list[CommandMatch]:
    """The destructive commands in ``text``, by position (overlaps kept: one command can
    destroy in two ways)."""
    found = [
        CommandMatch(kind, match.start(), match.end())
        for kind, pattern in _PATTERNS
        for match in pattern.finditer(text)
        if match.end() > match.start()
    ]
    return sorted(found, key=lambda match: (match.start, match.end))
