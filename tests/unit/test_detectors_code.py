"""Is it code? Snippets of several languages score high, also after OCR; prose does not."""

from __future__ import annotations

import pytest

from vsr_extproc.detectors import code_score
from vsr_extproc.detectors.code import LINE_MODEL_THRESHOLD, line_code_probability, screen_lines

CODE = {
    "python": """import json
from pathlib import Path


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root

    def load(self, name: str) -> dict:
        with open(self.root / name) as handle:
            data = json.load(handle)
        if not data:
            return {}
        return data
""",
    "javascript": """const express = require('express');
const app = express();

app.get('/users/:id', async (req, res) => {
  const user = await db.find(req.params.id);
  if (user === undefined) {
    return res.status(404).send('not found');
  }
  console.log(`served ${user.id}`);
  res.json(user);
});
""",
    "go": """package main

import (
    "fmt"
    "os"
)

func main() {
    data, err := os.ReadFile("config.yaml")
    if err != nil {
        fmt.Println(err)
        return
    }
    fmt.Printf("%d bytes\\n", len(data))
}
""",
    "java": """public class Greeter {
    private final String name;

    public Greeter(String name) {
        this.name = name;
    }

    public static void main(String[] args) {
        Greeter g = new Greeter("world");
        System.out.println("Hello " + g.name);
    }
}
""",
    "c": """#include <stdio.h>
#include <stdlib.h>

int main(void) {
    int *values = malloc(10 * sizeof(int));
    if (values == NULL) {
        return 1;
    }
    for (int i = 0; i < 10; i++) {
        values[i] = i * i;
    }
    printf("%d\\n", values[9]);
    free(values);
    return 0;
}
""",
    "rust": """use std::collections::HashMap;

fn main() {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for word in text.split_whitespace() {
        *counts.entry(word.to_string()).or_insert(0) += 1;
    }
    println!("{:?}", counts);
}
""",
    "sql": """SELECT u.id, u.email, COUNT(o.id) AS orders
FROM users u
LEFT JOIN orders o ON o.user_id = u.id
WHERE u.created_at > '2024-01-01'
GROUP BY u.id, u.email
ORDER BY orders DESC;
""",
}


@pytest.mark.parametrize(("language", "snippet"), CODE.items(), ids=CODE.keys())
def test_snippets_score_high_and_name_their_language(language: str, snippet: str) -> None:
    result = code_score(snippet)
    assert result.score >= 0.7, result
    assert result.language == language
    assert result.lines == len([line for line in snippet.splitlines() if line.strip()])


def ocr(snippet: str) -> str:
    """What OCR of a screenshot does: indentation lost, spaces around punctuation, some
    long lines broken and some short ones merged, quotes curled."""
    lines = [line.strip() for line in snippet.splitlines() if line.strip()]
    noisy: list[str] = []
    for index, line in enumerate(lines):
        line = line.replace("(", " (").replace(":", " :").replace('"', "\u201d")
        if len(line) > 40 and index % 2:
            noisy += [line[:25], line[25:]]
        elif noisy and index % 5 == 0:
            noisy[-1] += " " + line
        else:
            noisy.append(line)
    return "\n".join(noisy)


@pytest.mark.parametrize(("language", "snippet"), CODE.items(), ids=CODE.keys())
def test_snippets_still_read_as_code_after_ocr(language: str, snippet: str) -> None:
    assert code_score(ocr(snippet)).score >= 0.5, ocr(snippet)


def test_code_inside_a_question_is_still_code() -> None:
    text = "Why does this fail?\n" + CODE["python"] + "\nIt raises KeyError."
    assert code_score(text).score >= 0.5


NOT_CODE = {
    "prose": """The quick brown fox jumps over the lazy dog. It was a sunny day, and everyone
was happy to be outside in the park. We walked for hours and talked about our plans for
the summer, which included a trip to the mountains (weather permitting) and a visit to
grandmother; she had not seen the children since Easter.""",
    "recipe": """Chocolate chip cookies
Ingredients:
- 2 cups (250 g) all-purpose flour
- 1 tsp baking soda
- 1/2 tsp salt
- 1 cup butter, softened
- 3/4 cup sugar = about 150 g
Instructions:
1. Preheat the oven to 375°F (190°C).
2. Mix flour, baking soda and salt in a bowl.
3. Beat butter and sugars until creamy; add eggs.
4. Bake for 9 to 11 minutes or until golden brown.""",
    "poetry": """Shall I compare thee to a summer's day?
Thou art more lovely and more temperate:
Rough winds do shake the darling buds of May,
And summer's lease hath all too short a date;
Sometime too hot the eye of heaven shines,
And often is his gold complexion dimm'd;
And every fair from fair sometime declines,
By chance or nature's changing course untrimm'd""",
    "free-verse": """return
to the sea
where the gulls
for a while
if only
we could stay""",
    "email": """Hi Tom,

thanks for the update (see the attached file). If the build fails again, let me know;
I'll look at it tomorrow morning. Return the keys to the office when you leave.

Best regards,
Anna""",
    "meeting-notes": """Agenda for Monday:
- Budget review (Q3 numbers)
- Hiring: two engineers, one designer
- Offsite: dates TBD
Action items: Sam to send the deck, Priya to book rooms.""",
    "markdown-headings": "# Notes\n## Attendees\n- Anna\n- Tom\n## Decisions\n- Ship Friday",
    "hashtags": "#blessed #summer\nLoving the beach today!\n#nofilter",
    "form-fields": "Name: John Smith\nAge: 42\nCity: Berlin\nOccupation: teacher",
}


@pytest.mark.parametrize("text", NOT_CODE.values(), ids=NOT_CODE.keys())
def test_prose_recipes_and_poetry_score_low(text: str) -> None:
    result = code_score(text)
    assert result.score < 0.3, result
    assert result.language is None


#: verse and prose in other languages and scripts, some lines ending in ";" or "," as verse
#: does: no English function word among them, and few capitals or none
OTHER_LANGUAGES = {
    "russian": "Над рекой туман ложится;\nтихо спит усталый сад,\n"
    "и луна над старой крышей\nсветит много лет подряд;\nветер в поле засыпает",
    "greek": "Το καλοκαίρι φεύγει αργά;\nστα κύματα η θάλασσα γελά,\n"
    "οι φίλοι μένουν στην αυλή\nκαι τραγουδούν μέχρι πρωί;",
    "arabic": "في الصباح يذهب الأطفال إلى المدرسة؛\nويعود الأب من العمل متعبا,\n"
    "وتطبخ الجدة طعام العشاء للعائلة\nثم يجلس الجميع حول الطاولة;",
    "hebrew": "הבוקר הלכנו לשוק הגדול;\nקנינו ירקות ופירות טריים,\n"
    "ואחר כך ישבנו בבית קפה קטן\nושתינו תה חם עם נענע;",
    "hindi": "सुबह की धूप आँगन में आई;\nबच्चे खेलने बाहर गए,\nदादी ने मीठी खीर बनाई\nऔर सबने मिलकर खाना खाया;",
    "japanese": "春の朝、川のほとりを歩いた;\n桜の花が静かに散っていた,\n"
    "子どもたちは公園で遊んでいる\n夕方には雨が降るそうだ;",
    "chinese": "今天早上我去公园散步;\n湖边的柳树已经发芽了,\n"
    "老人们在树下下棋聊天\n孩子们在草地上放风筝;",
    "spanish": "Las olas llegan a la orilla;\nlos niños juegan en la arena,\n"
    "mi abuela cuenta sus historias\ny el sol se esconde tras el monte;",
    "turkish": "Sabahları çay demlenir;\nkomşular bahçede buluşur,\n"
    "çocuklar okula koşarken\nşehir yavaşça uyanır;",
}


@pytest.mark.parametrize("text", OTHER_LANGUAGES.values(), ids=OTHER_LANGUAGES.keys())
def test_prose_in_other_languages_and_scripts_is_not_code(text: str) -> None:
    """The line model was fitted on English prose until programs' translated messages
    joined it: a line of words without an English function word, in a script without
    capitals, read as code: eight of these nine texts scored 0.53–0.83 before."""
    result = code_score(text)
    assert result.score < 0.5, result


@pytest.mark.parametrize("text", ["", "   \n\n  "])
def test_empty_text(text: str) -> None:
    assert code_score(text) == code_score("") == type(code_score(""))(0.0, None, 0)


def test_language_is_left_open_when_the_markers_disagree() -> None:
    mixed = "x := 1\nconst y = 2;\nprint(x)\n"
    assert code_score(mixed).language is None


def with_gutter(snippet: str, first: int = 1, separator: str = "  ") -> str:
    """An editor's line numbers in front of every line, blank lines numbered too."""
    return "\n".join(
        f"{number}{separator}{line}"
        for number, line in enumerate(snippet.splitlines(), start=first)
    )


@pytest.mark.parametrize(("language", "snippet"), CODE.items(), ids=CODE.keys())
@pytest.mark.parametrize("separator", ["  ", " | ", " "])
def test_a_line_number_gutter_does_not_hide_the_code(
    language: str, snippet: str, separator: str
) -> None:
    plain = code_score(snippet)
    numbered = code_score(with_gutter(snippet, first=118, separator=separator))
    assert numbered.score >= 0.7, numbered
    assert numbered.score == pytest.approx(plain.score, abs=0.05)
    assert numbered.language == language


def test_line_numbers_that_ocr_glued_to_the_code_are_a_gutter_too() -> None:
    # OCR drops the gap between a number and code that starts with a letter or a mark
    # (``3L0G0_PNG = …``, ``1inport hashlib``); a short file has too few numbers for the OCR
    # engine to find its gutter as a column, so the text alone must show it
    snippet = CODE["python"]
    glued = "\n".join(
        f"{number}{'' if line[:1].isalpha() or line[:1] in '#@' else ' '}{line}"
        for number, line in enumerate(snippet.splitlines(), start=1)
    )
    assert "1import json" in glued
    assert code_score(glued).score == pytest.approx(code_score(snippet).score, abs=0.05)
    assert code_score(glued).score >= 0.7


def test_digits_at_the_start_of_lines_that_do_not_count_up_stay() -> None:
    # measurements and hex bytes glued to what follows are not line numbers
    table = "4px solid red\n0xFF mask\n2em margin\n0xA0 space\n1fr auto"
    assert [line for line, _ in screen_lines(table)] == table.splitlines()
    counting = "1px solid red\n2em margin\n3fr auto\n4px dashed\n5em padding"
    assert screen_lines(counting)[0][0] == "px solid red"  # counting up: a gutter


def test_a_numbered_list_in_prose_is_not_a_gutter() -> None:
    steps = "\n".join(
        f"{n} {line}" for n, line in enumerate(NOT_CODE["prose"].splitlines(), start=1)
    )
    assert code_score(steps).score < 0.3


def test_a_diff_reads_as_code() -> None:
    diff = """diff --git a/app/models.py b/app/models.py
index 3f2a1b4..8c9d0e1 100644
--- a/app/models.py
+++ b/app/models.py
@@ -12,7 +12,8 @@ class Order(Base):
     id = Column(Integer, primary_key=True)
-    total = Column(Float)
+    total = Column(Numeric(10, 2), nullable=False)
+    currency = Column(String(3), default="EUR")
     def __repr__(self):
-        return f"<Order {self.id}>"
+        return f"<Order {self.id} {self.total} {self.currency}>"
"""
    result = code_score(diff)
    assert result.score >= 0.7, result
    assert result.language == "python"


def test_a_terminal_session_with_a_traceback_reads_as_code() -> None:
    session = """$ python manage.py migrate
Traceback (most recent call last):
  File "/srv/app/manage.py", line 22, in <module>
    main()
  File "/srv/app/manage.py", line 18, in main
    execute_from_command_line(sys.argv)
django.db.utils.OperationalError: could not connect to server
$ export DATABASE_URL=postgres://app@localhost/app
>>> import os
>>> os.environ.get("DATABASE_URL")
In [3]: df.groupby("user_id").size()"""
    assert code_score(session).score >= 0.5, code_score(session)


@pytest.mark.parametrize(
    "session",
    [
        # a program's output between the commands read as sentences before (0.44, 0.44)
        '$ git status\nOn branch main\nChanges not staged for commit:\n  (use "git add '
        '<file>..." to update what will be committed)\n\tmodified:   src/app.py\n$ git '
        'commit -am "fix"\n[main 3f2a1c9] fix\n 1 file changed, 2 insertions(+), 1 deletion(-)',
        "In [1]: import numpy as np\n\nIn [2]: np.arange(5).reshape(2, 3)\n"
        "---------------------------------------------------------------------------\n"
        "ValueError                                Traceback (most recent call last)\n"
        "Cell In[2], line 1\n----> 1 np.arange(5).reshape(2, 3)\n\n"
        "ValueError: cannot reshape array of size 5 into shape (2,3)",
    ],
    ids=["git", "ipython"],
)
def test_what_a_terminals_commands_print_is_not_prose(session: str) -> None:
    assert code_score(session).score >= 0.6, code_score(session)


@pytest.mark.parametrize(
    "text",
    [
        "$ 5 off your next order when you sign up today\n"
        "$ 10 off orders over fifty dollars this weekend only\n"
        "Terms and conditions apply to every offer in this leaflet.",
        ">>> On Monday, Anna wrote:\n>>> Thanks for the update, we will review it tomorrow.\n"
        "> Sounds good, let me know how it goes.\n"
        "Sure, I will send the notes after the meeting.\nBest regards,\nTom",
    ],
    ids=["prices", "quoted-email"],
)
def test_prices_and_quoted_mail_are_no_terminal(text: str) -> None:
    assert code_score(text).score < 0.5, code_score(text)


BLOCKS_ENDING_IN_WORDS = {
    "ruby": "require 'json'\n\nclass Cart\n  def total\n    items.sum do |item|\n"
    "      item.price * item.quantity\n    end\n  end\nend\nputs Cart.new.total",
    "lua": "local M = {}\nlocal function clamp(x, lo, hi)\n  if x < lo then\n    return lo\n"
    "  end\n  return math.min(x, hi)\nend\nreturn M",
    "elixir": "defmodule Greeter do\n  def hello(name) do\n    name\n    |> String.trim()\n"
    "    |> IO.puts()\n  end\nend",
    "scala": "object Main {\n  case class Point(x: Int, y: Int)\n  val origin = Point(0, 0)\n"
    "  def norm(p: Point): Double = math.sqrt(p.x * p.x + p.y * p.y)\n}",
    "perl": "use strict;\nuse warnings;\nmy $total = 0;\nsub add {\n  my ($x) = @_;\n"
    "  $total += $x;\n}\nprint $total;",
    "shell": '#!/bin/bash\nfor f in *.log\ndo\n  if [ -s "$f" ]; then\n    gzip "$f"\n  fi\n'
    "done\necho finished",
}


@pytest.mark.parametrize(
    "snippet", BLOCKS_ENDING_IN_WORDS.values(), ids=BLOCKS_ENDING_IN_WORDS.keys()
)
def test_languages_whose_blocks_end_in_words_read_as_code(snippet: str) -> None:
    assert code_score(snippet).score >= 0.5, code_score(snippet)


# Languages no line cue names: read as code by the shape model alone.
UNCUED = {
    "haskell": """insert :: Ord a => a -> Tree a -> Tree a
insert x Leaf = Node Leaf x Leaf
insert x t@(Node l y r)
  | x < y     = Node (insert x l) y r
  | x > y     = Node l y (insert x r)
  | otherwise = t
size :: Tree a -> Int
size Leaf = 0
size (Node l _ r) = size l + 1 + size r
""",
    "ocaml": """let rec fold f acc xs =
  match xs with
  | [] -> acc
  | x :: rest -> fold f (f acc x) rest
let total = fold (+) 0 [1; 2; 3]
let () = Printf.printf "%d\\n" total
type shape = Circle of float | Rect of float * float
let area s = match s with Circle r -> 3.14 *. r *. r | Rect (w, h) -> w *. h
""",
    "erlang": """-module(counter).
-export([start/0, loop/1]).
start() -> spawn(counter, loop, [0]).
loop(N) ->
    receive
        {inc, From} -> From ! {ok, N + 1}, loop(N + 1);
        {get, From} -> From ! {value, N}, loop(N);
        stop -> ok
    end.
""",
    "fortran": """program area
  implicit none
  real :: r, a
  integer :: i
  do i = 1, 10
    r = real(i) * 0.5
    a = 3.14159 * r**2
    print *, i, a
  end do
end program area
""",
}


@pytest.mark.parametrize("snippet", UNCUED.values(), ids=UNCUED.keys())
def test_code_of_languages_no_cue_names_reads_as_code(snippet: str) -> None:
    assert code_score(snippet).score >= 0.5, code_score(snippet)


def test_the_line_model_tells_code_shapes_from_sentences_and_forms() -> None:
    from vsr_extproc.detectors.code import LINE_MODEL_THRESHOLD, line_code_probability

    for line in ("total := sum(xs) / len(xs)", "(map inc (filter odd? xs))", "x -> x * 2;"):
        assert line_code_probability(line) >= LINE_MODEL_THRESHOLD, line
    for line in (
        "Thank you for your order, it will ship on Monday.",
        "Subtotal: $42.50",
        "12 Elm Street, Springfield 62704",
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<",
    ):
        assert line_code_probability(line) < LINE_MODEL_THRESHOLD, line
    # fewer than three tokens say nothing either way: a word of a file tree, a block end
    assert line_code_probability("tests") == line_code_probability("end") == 0.5


def test_comments_inside_code_do_not_count_as_prose() -> None:
    commented = """# Read the settings file and return the values the service needs.
# Missing keys fall back to the defaults written in the module below.
# The caller is expected to handle a missing file by itself.
def load(path):
    with open(path) as handle:
        data = json.load(handle)
    return {**DEFAULTS, **data}
"""
    assert code_score(commented).score >= 0.5, code_score(commented)


def test_messages_in_string_literals_do_not_count_as_prose() -> None:
    """A script that talks to its user: each message is a sentence, each line a command."""
    script = """#!/bin/sh
backup_dir=/var/backups/site
echo "Starting the nightly backup of the site database now"
tar czf site.tar.gz /srv/site
echo "The archive is written, copying it to the backup host"
printf "Copied %s to the remote host without any errors\\n" site.tar.gz
echo "Everything finished, you can close this window safely"
"""
    assert code_score(script).score >= 0.5, code_score(script)
    # the same sentences without a command before them are still prose
    said = "\n".join(f'She said "{line}" and left.' for line in (
        "the backup of the site database starts tonight at nine",
        "the archive will be copied to the backup host after that",
        "everything should be finished before you come back tomorrow",
    ))  # fmt: skip
    assert code_score(said).score < 0.5, code_score(said)
    # as OCR reads it, the space before the quote lost
    assert code_score(script.replace('echo "', 'echo"')).score >= 0.5


def test_a_comment_after_the_code_on_its_line_does_not_make_it_prose() -> None:
    commented = """retries = 3  # how many times a failed request is tried again before giving up.
timeout = 30  # seconds to wait for the server to answer one single request.
backoff = 2.5  # the factor by which the wait grows after every failed try.
verbose = False  # print every request and answer when this is switched on.
"""
    assert code_score(commented).score >= 0.5, code_score(commented)


LICENCE_HEADER = """/*
 * Copyright 2024 The Example Authors. All rights reserved.
 *
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not
 * use this file except in compliance with the License. You may obtain a copy
 * of the License at http://www.apache.org/licenses/LICENSE-2.0 and read it.
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 * WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 * License for the specific language governing permissions and limitations.
 */
"""


@pytest.mark.parametrize(
    ("header", "code"),
    [
        (
            LICENCE_HEADER,
            "package org.example;\n\npublic final class Ids {\n    static String next() {\n"
            "        return UUID.randomUUID().toString();\n    }\n}\n",
        ),
        (
            LICENCE_HEADER.replace("/*", "--[[", 1).replace(" */", "]]"),
            "local M = {}\n\nfunction M.add(a, b)\n  return a + b\nend\n\nreturn M\n",
        ),
    ],
    ids=["java", "lua"],
)
def test_a_licence_header_in_a_block_comment_does_not_hide_the_code(header: str, code: str) -> None:
    # the header's " * ..." lines are inside the comment: neither prose nor code
    assert code_score(header + code).score >= 0.5, code_score(header + code)


def test_block_comments_alone_or_closed_on_their_line_leave_prose_prose() -> None:
    # a mark closed on its own line mutes that line only; the sentence after it is prose
    text = "(* draft *) Notes from the meeting\nWe agreed to meet again on Friday at noon.\n"
    assert code_score(text).score < 0.5
    assert code_score(LICENCE_HEADER).score < 0.5


DOCSTRING_TAIL = '''        entries older than the limit are dropped first, and a miss costs one
        read of the backing store; the caller never sees the store's errors,
        which are logged and answered with the default.
        """
        if key in self._entries:
            self._hits += 1
            return self._entries[key]
        value = self._store.read(key, default)
        self._entries[key] = value
        return value

    def clear(self) -> None:
        """Forget every entry and the hit count."""
        self._entries.clear()
        self._hits = 0

    def resize(self, size: int) -> None:
        """Keep at most ``size`` entries from now on.

        The oldest entries go first when the cache shrinks, as they would
        have gone at the next insertions anyway.
        """
        while len(self._entries) > size:
            self._entries.popitem(last=False)
'''

HEADER_TAIL = """ * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */
package org.example.cache;

/**
 * A bounded map from keys to the values read for them, the oldest
 * entries evicted first when it is full.
 */
public final class Bounded {
    private final int size;
"""


@pytest.mark.parametrize("text", [DOCSTRING_TAIL, HEADER_TAIL], ids=["docstring", "header"])
def test_a_screen_scrolled_into_a_docstring_or_a_comment_reads_as_code(text: str) -> None:
    # the screen shows the closer (a docstring's quotes, "*/") before any opener: the lines
    # above it are the program's prose, and so are the docstrings further down
    assert code_score(text).score >= 0.5, code_score(text)


def test_a_docstring_after_a_header_is_the_programs_prose() -> None:
    # its quotes alone on a line right after "def …:" open it; the quotes after its text
    # close it; code that assigns a block string is still code
    text = (
        "def load(path):\n"
        '    """\n'
        "    Read the file at the path given and return what it holds, as a list\n"
        "    of records, one for each line that is not empty or a comment.\n"
        "    A line that cannot be read is skipped and logged with its number, so\n"
        "    that one bad record does not cost the others; the caller sees how\n"
        "    many were skipped in the log, not in the result.\n"
        '    """\n'
        "    with open(path) as handle:\n"
        '        query = """\n'
        "        SELECT id, name FROM records WHERE path = ?\n"
        '        """\n'
        "        return [parse(line) for line in handle if line.strip()]\n"
    )
    assert code_score(text).score >= 0.5, code_score(text)
    # prose with a quotation in triple quotes is still prose
    prose = (
        'She wrote """see you soon""" at the end of every letter she sent to us.\n'
        "We kept all of them in a box under the stairs for many years after that.\n"
    )
    assert code_score(prose).score < 0.5


LUA_WITH_DOC_COMMENTS = """--- File helpers.
-- These put functions of other modules under one name.
-- @module files
local utils = require 'utils'
local files = {}
--- Return the contents of a file as a string.
-- This is a copy of `utils.readfile`.
-- @function files.read
files.read = utils.readfile
--- Write a string to a file.
-- This is a copy of `utils.writefile`.
-- @function files.write
files.write = utils.writefile
--- Remove a file.
-- This is a copy of `os.remove`.
-- @function files.delete
files.delete = os.remove
return files
"""


def test_comments_that_open_with_dashes_are_not_a_diffs_removed_lines() -> None:
    # Lua's, SQL's and Haskell's "-- " and "--- " comments: taking the first dash off
    # as a diff marker made each of them a line of prose
    result = code_score(LUA_WITH_DOC_COMMENTS)
    assert result.score >= 0.5, result


def test_a_table_of_literals_in_code_reads_as_code() -> None:
    # one literal and a comma on each line, a comment after some: data, in a program
    ranks = (118, 141, 113, 129, 119, 125, 165, 117, 92, 106, 83, 72, 99, 93, 65, 79)
    names = ("nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect")
    rows = [f"    {rank}, // {names[index % len(names)]}" for index, rank in enumerate(ranks)]
    table = "pub const BYTE_RANK: [u8; 16] = [\n" + "\n".join(rows) + "\n];\n"
    assert code_score(table).score >= 0.5, code_score(table)
    words = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota")
    strings = "\n".join(f'    "{word}",' for word in words)
    assert code_score(f"GREEK = [\n{strings}\n]\n").score >= 0.5


def test_lines_that_end_in_a_comma_are_not_literals_in_prose() -> None:
    poem = (
        "The morning came in slowly,\nand the yard was white with frost,\n"
        "the kettle on the stove,\nthe radio turned low,\nand nobody was in a hurry,\n"
        "not the dog, not the cat,\nnot even the old clock,\nwhich had stopped years ago.\n"
    )
    assert code_score(poem).score < 0.5
    sheet = "\n".join(
        f"{name},{qty},{price}"
        for name, qty, price in (
            ("Paper", 4, "3.50"),
            ("Pens", 12, "0.80"),
            ("Stapler", 1, "7.20"),
            ("Folders", 10, "1.10"),
            ("Tape", 3, "2.40"),
            ("Ink", 2, "18.00"),
        )
    )
    assert code_score("Item,Qty,Price\n" + sheet).score < 0.5


# code as OCR reads it: comment marks misread or lost
OCR_RUST_DOCS = """struct Threads {
Ill An ordered set of opcodes, each of them a state of the machine. The
Ill order is the order in which the states were added, which is the order
Ill in which the machine must follow them to find the leftmost match.
    set: SparseSet,
/ll Captures for every state of the machine, stored in row-major order,
/l/ where the columns are the capture slots and the rows are the states.
/ll Every capture group has two slots, one for its start and one for its
/ll end, so there are twice as many slots as groups.
    caps: Vec<Slot>,
}
"""

OCR_UNCLOSED_BLOCK = """(* Ensure that the functions registered with [at_exit] are called at the
   end of every program that links this module, whatever way it ends x)
let _ = do_at_exit ()
let const c _ = c
let flip f x y = f y x
let negate p v = not (p v)
exception Finally_raised of exn
let () = Printexc.register_printer @@ function
  | Finally_raised exn -> Some ("Fun.Finally_raised: " ^ Printexc.to_string exn)
  | _ -> None
"""

OCR_LOST_CLOSER = """src
README.md
pyproject.toml
OtpSelf.java
/**
 * Create a self node with the name and the cookie given, listening on a
 * port of its own for the connections of other nodes.
 * @param node the name of this node.
 * @param cookie the authorization cookie used with the other nodes.
 x/
public OtpSelf(final String node, final String cookie) throws IOException {
    super(node, cookie);
    sock = OtpTransportFactory.createServer(0);
    port = sock.getLocalPort();
    pid = createPid();
}
"""


@pytest.mark.parametrize(
    "text",
    [OCR_RUST_DOCS, OCR_UNCLOSED_BLOCK, OCR_LOST_CLOSER],
    ids=["doc-comment-marks-misread", "closer-misread", "star-comment-closer-misread"],
)
def test_comments_whose_marks_ocr_misread_or_lost_are_still_comments(text: str) -> None:
    # "///" read as "Ill" or "/ll"; a "*)" or a "*/" read with an "x", so the block never
    # closes: the comment's sentences must not count as the screen's prose, nor the code
    # after an unclosed block count for nothing
    assert code_score(text).score >= 0.5, code_score(text)


def test_a_star_bullet_list_is_prose_though_a_path_holds_a_glob() -> None:
    notes = (
        "libfoo (1.2.0-2) unstable; urgency=low\n"
        "  * The development package no longer installs usr/include/X11/*\n"
        "  * Updated the description of the package to say what it is for\n"
        "  * Moved the documentation into its own package as it is large\n"
        "  * Fixed a typo in the long description that users reported twice\n"
        "  * Switched the build to the current standards version of the policy\n"
    )
    assert code_score(notes).score < 0.5


# a block comment whose opener and closer OCR lost: only its starred lines are left
OCR_LOST_OPENER = """src
tests
README.md
RetryPolicy.java
int attempts = 0;
while (attempts < limit) {
try {
return call.run();
} catch (final IOException e) {
attempts++;
* Waits before the next attempt, twice as long as the time before, up to
* the ceiling given when the policy was built. A value of zero means
* that the policy never waits, which the tests of the client rely on:
* they run every attempt at once and count them instead of timing them.
米
* @param attempt
米 the number of attempts made so far, counted from one.
* @return the wait in milliseconds, never more than the ceiling.
private long backoff(final int attempt) {
long wait = base << Math.min(attempt, 20);
return Math.min(wait, ceiling);
"""

OCR_WRAPPED_DOC = """* Holds the settings a client reads when it opens a connection to the
* server: the host, the port and the time to wait for an answer. It is
*built once and shared by every thread of the client, so its fields are
* final and the class has no setters.
public final class ClientSettings {
private final String host;
private final int port;
private final Duration timeout;
public ClientSettings(String host, int port, Duration timeout) {
this.host = host;
this.port = port;
"""


@pytest.mark.parametrize(
    "text", [OCR_LOST_OPENER, OCR_WRAPPED_DOC], ids=["lone-stars-and-tags", "wrapped-sentences"]
)
def test_a_block_comment_whose_opener_ocr_lost_is_still_a_comment(text: str) -> None:
    # no "/*" or "*/" is left, but a star alone on its line (or read as "米"), a doc tag, or
    # a sentence wrapped from one starred line to the next shows the comment
    assert code_score(text).score >= 0.5, code_score(text)


LOWERCASE_CHANGELOG = """  [ Ana Lima ]
  * pagertool: read xz-compressed files too (closes: #1002003)

 -- Ana Lima <ana@example.org>  Thu, 30 Dec 2021 01:54:19 -0500

most (551-2) sid; urgency=medium

  * remove the /bin/pager alternative before the upgrade to this
    version (closes: #990011) (lp: #1870001)
  * debian/rules: use mktemp instead of tempfile (closes: #990012)
  * do not install an empty /usr/share/pagertool/ directory
  * remove stray quotes around the placeholder of the mailcap entry
  * set standards version to 4.5.0

 -- Ana Lima <ana@example.org>  Sun, 05 Jul 2020 19:36:33 -0400

most (551-1) sid; urgency=low

  * new upstream release, with thanks to everyone who sent patches
"""


def test_a_list_of_lowercase_items_is_not_a_block_comment() -> None:
    # each item starts with its star and ends where a sentence may; taken for a comment's
    # lines, the items would fall silent and the headers around them read as code
    assert code_score(LOWERCASE_CHANGELOG).score < 0.5, code_score(LOWERCASE_CHANGELOG)


# an IDE's file tree, the numbered code, then the column of values OCR read apart from it
GUTTER_BESIDE_A_TREE = """src
include
tests
Makefile
README.md
config.h
config.h
40 #define NET RETRY LIMIT
41 #define NET RETRY DELAY MS
42 #define NET BUFFER SIZE
43 #define NET MAX PEERS
44 #define NET KEEPALIVE S
45 #define NET IDLE TIMEOUT S
46 #define NET_BACKLOG
47 #define NET PORT DEFAULT
48
49 /* framing */
50 #define FRAME_MAGIC
51 #define FRAME HEADER LEN
5
250
4096
64
30
120
128
8080
0x5a17
12
"""


def test_a_run_of_counted_line_numbers_is_a_gutter_among_other_lines() -> None:
    # fewer than half the lines start with a number (the tree and the values do not), but
    # twelve adjacent lines numbered 40, 41, 42 … are a gutter; without it "#define" is not
    # at the start of its line
    assert code_score(GUTTER_BESIDE_A_TREE).score >= 0.5, code_score(GUTTER_BESIDE_A_TREE)


TREE_THEN_CODE = """src
app
tests
README.md
pyproject.toml
Settings.java
Settings.java
Loader.java
Cache.java
build.gradle
Main.java
Worker.java
int size = entries.size();
if (size > limit) {
evictOldest(size - limit);
return true;
"""


def test_an_ides_file_names_are_chrome_not_content() -> None:
    # eleven file names beside four lines of code: they say nothing either way, so the code
    # is the screen's content; a tree alone is still not code
    assert code_score(TREE_THEN_CODE).score >= 0.5, code_score(TREE_THEN_CODE)
    tree = "src\napp\ntests\nREADME.md\npyproject.toml\nnotes.md\nplan.md\n"
    assert code_score(tree).score < 0.5

    # names with an underscore or a dot hold code cues of their own; a file tree full of
    # them beside a page of prose is still chrome, and the page still prose
    snake_tree = "\n".join(
        ["model_card.md", "train_config.yaml", "data_loader.py", "eval_report.md"] * 2
    )
    page = "\n".join([*NOT_CODE["email"].splitlines(), snake_tree])
    assert code_score(page).score < 0.5, code_score(page)


# a Lua file's header as OCR reads it: the "--" before each line of the licence lost, the
# "--[[" and "]]" around it too; the code below it is plain
HEADER_MARKS_LOST_THEN_CODE = """This is an addon that adds statistical history to the auction data
that is collected when the auction is scanned, so that you can easily determine what price
you will be able to sell an item for at auction or at a vendor whenever you
mouse-over an item in the game
This program is free software; you can redistribute it and/or
modify it under the terms of the GNU General Public License
as published by the Free Software Foundation; either version 2
of the License, or (at your option) any later version.
This program is distributed in the hope that it will be useful,
but WITHOUT ANY WARRANTY; without even the implied warranty of
MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE. See the
GNU General Public License for more details.
You should have received a copy of the GNU General Public License
along with this program; if not, write to the Free Software Foundation.
if (not AucAdvanced) then AucAdvanced = {} end
if (not AucAdvancedData) then AucAdvancedData = {} end
if (not AucAdvancedLocal) then AucAdvancedLocal = {} end
if (not AucAdvancedConfig) then AucAdvancedConfig = {} end
AucAdvanced.Version="<%version%>";
if (AucAdvanced.Version == "<".."%version%>") then
    AucAdvanced.Version = "5.0.DEV";
end
local frame = CreateFrame("Frame", nil, UIParent)
"""


def test_five_lines_of_clear_code_are_code_whatever_prose_surrounds_them() -> None:
    assert code_score(HEADER_MARKS_LOST_THEN_CODE).score >= 0.5, code_score(
        HEADER_MARKS_LOST_THEN_CODE
    )
    # two such lines below the same page of prose do not make it code
    header = HEADER_MARKS_LOST_THEN_CODE.split("\nif ")[0]
    page = "\n".join([header, "x = compute(a, b);", "print(x.total);"])
    assert code_score(page).score < 0.5, code_score(page)


OCR_GLUED_SLASHES = """// Each worker keeps its own queue of jobs, and steals from the queue of
I/ another worker only when its own is empty. The queues are bounded so
I/that a slow worker cannot hold on to more jobs than it can run soon,
//and a job that waits too long is handed back to the shared queue.
I/Stealing takes half of the other queue at once, which keeps the number
I/of steals low when one worker falls behind for a while.
//We tried a single shared queue first; it was simpler but every push
I/and pop took the same lock, and the lock was the bottleneck.
pub struct Worker {
    queue: Mutex<VecDeque<Job>>,
    limit: usize,
}
"""


def test_line_comments_whose_slashes_ocr_read_as_i_are_comments() -> None:
    # "//" read as "I/", glued to the comment's first word as often as not
    assert code_score(OCR_GLUED_SLASHES).score >= 0.5, code_score(OCR_GLUED_SLASHES)
    # "I/O" is a word, not a mark: taken for one, these sentences would fall silent and
    # the one assignment after them would read as a screen of code
    io = (
        "I/O errors are retried three times before the job gives up on the disk.\n"
        "I/O schedulers decide the order in which the requests reach the device.\n"
        "I/O waits show up as idle time in most of the tools that people use.\n"
        "retries = 3\n"
    )
    assert code_score(io).score < 0.5, code_score(io)


# OCR dropped each docstring's closing quotes, alone on their line: the second docstring's
# opening quotes then closed the first, muting the code between them, and its own lines
# counted as prose
OCR_LOST_DOCSTRING_CLOSER = '''def rows(table, limit):
"""Return the first rows of the table, at most limit of them.
The rows come back as dictionaries keyed by column name, in the order
the database returns them, which is the order of the primary key.
return list(table.select().limit(limit))
def header(table, quoting):
"""Return the column names joined by commas, for the first line of
a file the export writes; quoting is left to the writer, which knows
which of the names hold a comma and must be put between quotes, and
which do not; the writer also decides what a missing name becomes.
names = [column.name for column in table.columns]
return ",".join(quoting(name) for name in names)
'''


def test_docstrings_whose_closing_quotes_ocr_dropped_do_not_hide_the_code() -> None:
    assert code_score(OCR_LOST_DOCSTRING_CLOSER).score >= 0.5, code_score(OCR_LOST_DOCSTRING_CLOSER)
    # a closer that ends a later line still holds the code-like lines before it in the
    # comment: commented-out code stays a comment
    commented_out = (
        "The export job writes one file a table, as described below.\n/*\n"
        "names = [column.name for column in table.columns]\n"
        'line = ",".join(quoting(name) for name in names)\n'
        'stream.write(line + "\\n")\n'
        "return len(names)\n*/\n"
        "Each file is named after its table and written to the export folder.\n"
    )
    assert code_score(commented_out).score < 0.5, code_score(commented_out)


# Erlang's comments as its sources often write them, the marks glued to the words
ERLANG_GLUED_COMMENTS = """%%%CopyrightBegin%
%%%Licensed to the project under the terms of the Apache License, Version 2.0;
%%%you may not use this file except in compliance with the License, which
%%%says what you may and may not do with it, and under which conditions.
%%%CopyrightEnd%
-module(queue_sup).
%%%API
-export([start_link/1]).
%%%Supervisor callbacks
-export([init/1]).
"""


def test_percent_comments_glued_to_their_words_are_comments() -> None:
    assert code_score(ERLANG_GLUED_COMMENTS).score >= 0.5, code_score(ERLANG_GLUED_COMMENTS)


GO_STRUCT = """type Options struct {
\t// Addr is the address the server listens on, host and port.
\tAddr string

\t// Timeout bounds each request, reading the body included.
\tTimeout time.Duration

\t// Verbose logs every request line to standard error.
\tVerbose bool

\t// Retries is how often a failed upstream call is tried again.
\tRetries int

\t// Output receives the log lines; standard error when nil.
\tOutput io.Writer
"""

SHELL_CASE = """        --config | --rc-file)
            _filedir conf
            return
            ;;
        --help | --version | --quiet | --dry-run | --no-color | --force | \\
            --all | --recursive | --follow | --one-file-system | --stats)
            return
            ;;
        --output | --cache-dir | --state-dir | --log-dir | --spool-dir | \\
            --socket | --pid-file | --lock-file | --run-dir | --tmp-dir)
            _filedir
            return
            ;;
        --width | --height | --depth | --limit | --retries | --timeout | \\
            --delay | --interval | --jobs | --threads | --port | --priority | \\
            --level | --offset | --count | --size | --scale | --speed)
            return
            ;;
"""

OPTIONS_IN_PROSE = """Running the tool

The tool reads its settings from the file named by --config and writes a report.
Pass -v once for more detail and twice for every request the tool makes on the way.
With --dry-run it prints what it would change but leaves every file as it was.
The --force option overwrites a report that already exists in the output folder.
Use --quiet in scripts: only errors are printed, and the exit status says the rest.
"""


def test_a_structs_typed_fields_between_comments_read_as_code() -> None:
    # every field is a name and a type alone on its line, each under its comment
    assert code_score(GO_STRUCT.expandtabs(4).split("\n", 1)[1]).score >= 0.5
    assert code_score("The string\nA kite string\nMy bool").score < 0.5


def test_a_shell_case_of_options_reads_as_code() -> None:
    # options joined by ``|`` are not words of prose, ``;;`` alone ends a branch, and a
    # line ending in a backslash goes on on the next
    assert code_score(SHELL_CASE).score >= 0.5, code_score(SHELL_CASE)
    assert code_score(OPTIONS_IN_PROSE).score < 0.5, code_score(OPTIONS_IN_PROSE)


# a diff with too few changed lines to strip their markers (3 of 12), the changes comments
DIFF_OF_COMMENTS = """ http = require 'http'
 urls = ['http://www.google.com', 'http://www.nodejs.org']
+# This function sends a request to each address in turn and waits for the answer
+# before it moves on to the next one, so the answers come back in the same order
-# Every request here runs in order and each of them takes as long as the slowest
 task series_demo()
   total_time = 0
   for url in urls
     timer = new Date
     delay = new Date() - timer
     total_time += delay
   print total_time
"""


def test_a_comment_behind_a_diff_marker_counts_for_neither_side() -> None:
    # marked or not, a comment is the program's prose, not the screen's
    unchanged = "\n".join(
        line for line in DIFF_OF_COMMENTS.splitlines() if not line.startswith(("+#", "-#"))
    )
    assert code_score(DIFF_OF_COMMENTS).score == code_score(unchanged).score >= 0.5


LEAN_WITH_HEADER = """/-
Copyright (c) 2017 Johannes Hölzl. All rights reserved.
Released under Apache 2.0 license as described in the file LICENSE.
Authors: Johannes Hölzl
This file proves several formulations of the lemma, and the variants
that are used most often are stated first, with the others after them.
-/
import Mathlib.Order.Chain
variable {α : Type*} {r : α → α → Prop}
theorem exists_maximal (h : ∀ c, IsChain r c → ∃ ub, ∀ a ∈ c, r a ub) :
    ∃ m, ∀ a, r m a → r a m := by
  exact h
"""


def test_lean_and_lisp_block_comments_are_comments() -> None:
    assert code_score(LEAN_WITH_HEADER).score >= 0.5, code_score(LEAN_WITH_HEADER)
    lisp = LEAN_WITH_HEADER.replace("/-", "#|").replace("-/", "|#")
    assert [line for line, _ in screen_lines(lisp)][6] == "|#"
    assert code_score(lisp).score == code_score(LEAN_WITH_HEADER).score


@pytest.mark.parametrize(
    "line",
    [
        "parseLine :: String -> Either String Int",  # Haskell
        "mov rax, qword ptr [rbp - 8]",  # assembly
        "(defmethod area ((s square)) (* (side s) (side s)))",  # Common Lisp
        "always @(posedge clk) begin",  # Verilog
    ],
)
def test_lines_of_languages_the_machine_has_no_sources_of_are_code(line: str) -> None:
    # the line model is fitted on pinned upstream sources of such languages too
    assert line_code_probability(line) >= LINE_MODEL_THRESHOLD


FORTRAN_WITH_LICENCE = """!!$  Redistribution and use in source and binary forms, with or without
!!$  modification, are permitted provided that the following conditions
!!$  are met:
!!$    1. Redistributions of source code must retain the above copyright
!!$       notice, this list of conditions and the following disclaimer.
!!$    2. Redistributions in binary form must reproduce the above copyright
!!$       notice, this list of conditions, and the following disclaimer in the
!!$       documentation and/or other materials provided with the distribution.
!!$
subroutine psb_dgather(globx, locx, desc_a, info)
  use psb_base_mod
  implicit none
  ! the global vector, gathered on every process
  real(psb_dpk_), intent(out) :: globx(:)
  integer(psb_ipk_) :: err_act, m, n
  info = psb_success_
  call psb_erractionsave(err_act)
  m = psb_cd_get_global_rows(desc_a)
end subroutine psb_dgather
"""


def test_fortran_comment_lines_are_comments() -> None:
    # ``!`` and a licence's ``!!$`` lines are the program's prose, not the screen's
    assert code_score(FORTRAN_WITH_LICENCE).score >= 0.5, code_score(FORTRAN_WITH_LICENCE)


# a configured header that nests its directives, indenting them after the ``#`` (the style
# of OpenSSL's and glibc's headers)
NESTED_DIRECTIVES = """ * OpenSSL was configured with the following options:
 */

/* clang-format off */
# define OPENSSL_CONFIGURED_API 30000
# ifndef OPENSSL_RAND_SEED_OS
#  define OPENSSL_RAND_SEED_OS
# endif
# ifndef OPENSSL_THREADS
#  define OPENSSL_THREADS
# endif
# ifndef OPENSSL_NO_ASAN
#  define OPENSSL_NO_ASAN
# endif
# if defined(OPENSSL_SYS_UNIX)
#  include <unistd.h>
# endif
"""
PYTHON_COMMENTS_WITH_DIRECTIVE_WORDS = """# define the model's layers
# include the bias in every layer
# if the input is empty, return zeros
# else fall back to the defaults
"""


def test_a_c_directive_indented_after_its_hash_is_code_not_a_comment() -> None:
    """``# define X`` and ``#  endif`` are a preprocessor's directives, not comments (every
    line of the header above was muted as one, and it scored 0.0); a comment that starts
    with the same words in prose is still a comment."""
    assert code_score(NESTED_DIRECTIVES).score >= 0.5, code_score(NESTED_DIRECTIVES)
    prose = code_score(PYTHON_COMMENTS_WITH_DIRECTIVE_WORDS)
    assert prose.score < 0.5, prose
