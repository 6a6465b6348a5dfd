"""``language``: the language the request is written in (lingua).

    signals:
      language:
        - name: english
          languages: [en]
          min_confidence: 0.5
        - name: not_english            # confidently some other language
          languages: [en]
          mode: none_of
          min_confidence: 0.7

The detector chooses among ``text.languages`` (ISO 639-1 codes; each language's model
costs memory, so the list is explicit). The value names the detected language and its
confidence. With ``mode: any_of`` (the default) the signal matches when that language is
one of ``languages``; with ``none_of``, when it is none of them. Either way the detector
must be at least ``min_confidence`` sure, so a short, ambiguous prompt matches neither.

How sure is read two ways, by the script the text is written in. In the Latin script a
short text's confidence is spread over the languages that share its words ("ok": Polish
0.30, English 0.08; "go on": Spanish 0.14), so the likeliest language must be sure by
itself. In another script the few languages that write it share the confidence among
them ("Как приготовить борщ?": Russian 0.64, the rest Ukrainian), and no Latin-script
language is among them, so the languages listed are summed: that text is not English at
0.99, which the likeliest language alone (0.64) did not show; and a script none of
``text.languages`` writes (Thai when it is not listed) is none of them for certain.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from vsr_extproc.core.reading import ReadingBudget
from vsr_extproc.core.signals import AsyncSignal, Evaluation, Outcome
from vsr_extproc.runtime.entities import in_latin_script
from vsr_extproc.signals.base import AsyncSignalEntry, Resources, SignalFamily, run_cpu
from vsr_extproc.signals.texts import TextScope, reading_budget, scoped_reading

#: what the language detector reads: enough for its accuracy, and its time grows with it
LANGUAGE_SAMPLE_CHARS = 2_000


class LanguageEntry(AsyncSignalEntry):
    languages: tuple[str, ...] = Field(
        min_length=1, description="ISO 639-1 codes that make it match"
    )
    mode: Literal["any_of", "none_of"] = Field(
        default="any_of", description="match when the language is (not) one of `languages`"
    )
    min_confidence: float = Field(
        default=0.5, ge=0, le=1, description="the detector's confidence needed"
    )
    scope: TextScope = Field(default="prompt", description="which messages are read")


class LanguageDetector:
    """A lingua detector over a fixed set of languages, with models preloaded."""

    def __init__(self, codes: tuple[str, ...]) -> None:
        from lingua import IsoCode639_1, LanguageDetectorBuilder

        try:
            isos = [IsoCode639_1.from_str(code) for code in codes]
        except ValueError as exc:
            raise ValueError(f"text.languages: {exc}") from None
        self._detector: Any = (
            LanguageDetectorBuilder.from_iso_codes_639_1(*isos)
            .with_preloaded_language_models()
            .build()
        )

    def detect(self, text: str) -> tuple[str | None, float]:
        confidences = self.confidences(text)
        return next(iter(confidences.items()), (None, 0.0))

    def read(self, text: str) -> tuple[dict[str, float], bool]:
        """``confidences`` of ``text``, and whether it is written in the Latin script."""
        return self.confidences(text), in_latin_script(text)

    def confidences(self, text: str) -> dict[str, float]:
        """Each language's confidence (they sum to 1), the likeliest first; empty where
        the text shows none of them."""
        values = self._detector.compute_language_confidence_values(text)
        return {
            value.language.iso_code_639_1.name.lower(): float(value.value)
            for value in values
            if value.value > 0
        }


class LanguageSignal(AsyncSignal):
    family: ClassVar[str] = "language"

    def __init__(
        self, entry: LanguageEntry, detector: LanguageDetector, budget: ReadingBudget
    ) -> None:
        self.name = entry.name
        self.budget = budget
        self.timeout_s = entry.timeout_ms / 1000
        self.languages = frozenset(code.lower() for code in entry.languages)
        self.wanted = entry.mode == "any_of"
        self.min_confidence = entry.min_confidence
        self.scope: TextScope = entry.scope
        self.detector = detector

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        reading = scoped_reading(evaluation, self.scope, self.budget)
        # a language shows in its first few sentences; lingua's time grows with the text
        text = "\n".join(reading.texts)[:LANGUAGE_SAMPLE_CHARS]

        async def compute() -> tuple[dict[str, float], bool]:
            return await run_cpu(self.detector.read, text, owner=evaluation)

        confidences, latin = await evaluation.once(("language", self.scope), compute)
        language, confidence = next(iter(confidences.items()), (None, 0.0))
        value = {"language": language, "confidence": round(confidence, 3), **reading.report}
        if latin:  # the likeliest language, sure by itself
            if language is None:
                return Outcome(False, 0.0, value)
            listed = language in self.languages
            matched = listed == self.wanted and confidence >= self.min_confidence
            return Outcome(matched, confidence if listed == self.wanted else 1 - confidence, value)
        # the languages listed, summed; none of them where the detector knows none of the
        # script's languages (Thai, Hebrew, Greek without `el` in `text.languages`)
        among = sum(confidences.get(code, 0.0) for code in self.languages)
        sure = among if self.wanted else 1 - among
        return Outcome(sure >= self.min_confidence, sure, value)


def language_detector(resources: Resources) -> LanguageDetector:
    """The detector over ``text.languages``, one per process (the ``language`` signal and
    the named-entity model share it)."""
    codes: tuple[str, ...] = tuple(resources.config.text.languages)
    detector: LanguageDetector = resources.get(
        ("language", codes), lambda: LanguageDetector(codes), runtime=("language", "lingua")
    )
    return detector


def build(entry: LanguageEntry, resources: Resources) -> LanguageSignal:
    unknown = sorted(set(entry.languages) - set(resources.config.text.languages))
    if unknown:
        raise ValueError(
            f"signals.language {entry.name!r}: {', '.join(unknown)} not among text.languages"
        )
    return LanguageSignal(entry, language_detector(resources), reading_budget(resources))


FAMILY = SignalFamily("language", LanguageEntry, build, "the language of the request (lingua)")
