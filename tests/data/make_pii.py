#!/usr/bin/env python3
# ruff: noqa: E501  (template sentences and one-line field makers are kept whole)
"""Deterministic generator for ``pii.jsonl`` (PII detection development set).

A development tool, kept out of the package; run from anywhere::

    python tests/data/make_pii.py            # writes vsr_extproc/eval/data/pii.jsonl
    python tests/data/make_pii.py -o out.jsonl

Each output line is ``{"text": ..., "spans": [{"start", "end", "type"}], "locale": ...}``
with exact character offsets (Python ``str`` indices, i.e. code points).
``locale`` is the Faker locale the record was drawn from (phone numbers are
valid for that locale's region: en_US->US, en_GB->GB, de_DE->DE, fr_FR->FR).

Span conventions
  * email, phone, card, iban, ssn, passport, ip_address: exactly the value as
    written (cards/IBANs may contain the spaces/dashes they are printed with).
  * date_of_birth: only the date, and only where the context says it is a
    birth date. Other dates (meetings, invoices, log timestamps) are not spans.
  * mrz: the whole two-line ICAO 9303 TD3 passport MRZ (line 1, newline,
    line 2); check digits are computed correctly. The passport number inside
    the MRZ is not annotated separately.
  * secret: the credential value only (``password = "VALUE"`` -> VALUE;
    ``AWS_SECRET_ACCESS_KEY=VALUE`` -> VALUE), except PEM private keys, whose
    span is the whole block including the BEGIN/END lines.

Every value is validated before use (Luhn for cards, ISO 13616 mod-97 for
IBANs, SSA rules for SSNs, libphonenumber ``is_valid_number`` for phones);
invalid draws are skipped. All secrets are random fakes in realistic formats.
Templates and noise sentences were written for this project.

Output depends on the Faker version (records were produced with the version
pinned in the project's environment); the seed fixes everything else.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import re
import string
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

import phonenumbers
from faker import Faker

SEED = 9303
N_POSITIVE = 300
N_NOISE = 72
LOCALES = {"en_US": "US", "en_GB": "GB", "de_DE": "DE", "fr_FR": "FR"}
TYPES = (
    "email",
    "phone",
    "card",
    "iban",
    "ssn",
    "passport",
    "mrz",
    "ip_address",
    "date_of_birth",
    "secret",
)

rng = random.Random(SEED)
FAKERS: dict[str, Faker] = {}
for _i, _loc in enumerate(LOCALES):
    _f = Faker(_loc)
    _f.seed_instance(SEED + _i)
    FAKERS[_loc] = _f


# ----------------------------------------------------------------- validators
def luhn_ok(num: str) -> bool:
    digits = [int(c) for c in re.sub(r"\D", "", num)]
    if not 12 <= len(digits) <= 19:
        return False
    total = 0
    for i, x in enumerate(reversed(digits)):
        y = x * 2 if i % 2 else x
        total += y - 9 if y > 9 else y
    return total % 10 == 0


def iban_ok(iban: str) -> bool:
    s = iban.replace(" ", "").upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{10,30}", s):
        return False
    r = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in r)) % 97 == 1


def ssn_ok(ssn: str) -> bool:
    m = re.fullmatch(r"(\d{3})-?(\d{2})-?(\d{4})", ssn)
    if not m:
        return False
    area, group, serial = m.groups()
    return (
        area not in ("000", "666")
        and not area.startswith("9")
        and group != "00"
        and serial != "0000"
    )


def phone_ok(num: str, region: str) -> bool:
    if re.search(r"[a-zA-Z]", num):  # extensions such as x123 / ext.
        return False
    try:
        return bool(phonenumbers.is_valid_number(phonenumbers.parse(num, region)))
    except phonenumbers.NumberParseException:
        return False


def draw(fn: Callable[[], object], ok: Callable[[str], bool], tries: int = 200) -> str:
    for _ in range(tries):
        v = str(fn())
        if ok(v):
            return v
    raise RuntimeError("could not draw a valid value")


# ------------------------------------------------------------ MRZ (ICAO 9303)
def mrz_char_value(c: str) -> int:
    if c == "<":
        return 0
    if c.isdigit():
        return int(c)
    return ord(c) - ord("A") + 10


def mrz_check(field: str) -> str:
    w = (7, 3, 1)
    return str(sum(mrz_char_value(c) * w[i % 3] for i, c in enumerate(field)) % 10)


def mrz_name(s: str) -> str:
    s = unicodedata.normalize("NFKD", s)
    s = "".join(c for c in s if not unicodedata.combining(c)).upper()
    s = s.replace("Æ", "AE").replace("Ø", "O")
    return re.sub(r"[^A-Z]", "<", s)


@dataclass
class Person:
    first: str
    last: str
    sex: str
    dob: date
    passport: str
    mrz_state: str
    expiry: date


def make_mrz(p: Person) -> str:
    """Two-line TD3 (passport) machine-readable zone with correct check digits."""
    names = (mrz_name(p.last) + "<<" + mrz_name(p.first))[:39]
    line1 = ("P<" + p.mrz_state + names).ljust(44, "<")
    num = p.passport.ljust(9, "<")[:9]
    dob = p.dob.strftime("%y%m%d")
    exp = p.expiry.strftime("%y%m%d")
    personal = "<" * 14
    body_num = num + mrz_check(num)
    body_dob = dob + mrz_check(dob)
    body_exp = exp + mrz_check(exp)
    body_pers = personal + mrz_check(personal)
    composite = mrz_check(body_num + body_dob + body_exp + body_pers)
    line2 = body_num + p.mrz_state + body_dob + p.sex + body_exp + body_pers + composite
    assert len(line1) == 44
    assert len(line2) == 44
    return line1 + "\n" + line2


def mrz_ok(block: str) -> bool:
    l1, l2 = block.split("\n")
    if len(l1) != 44 or len(l2) != 44 or not l1.startswith("P"):
        return False
    checks = [(l2[0:9], l2[9]), (l2[13:19], l2[19]), (l2[21:27], l2[27]), (l2[28:42], l2[42])]
    if any(mrz_check(f) != c for f, c in checks):
        return False
    return mrz_check(l2[0:10] + l2[13:20] + l2[21:43]) == l2[43]


# ------------------------------------------------------------ value makers
MONTHS = {
    "en": ["January", "February", "March", "April", "May", "June", "July",
           "August", "September", "October", "November", "December"],
    "de": ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli",
           "August", "September", "Oktober", "November", "Dezember"],
    "fr": ["janvier", "février", "mars", "avril", "mai", "juin", "juillet",
           "août", "septembre", "octobre", "novembre", "décembre"],
}  # fmt: skip


def fmt_date(d: date, loc: str, native: bool = True) -> str:
    """Format a date as people in ``loc`` write it; month names only in the template's language."""
    en = MONTHS["en"][d.month - 1]
    if loc == "en_US":
        opts = [f"{en} {d.day}, {d.year}", d.strftime("%m/%d/%Y"), d.isoformat()]
        opts.append(f"{en[:3]} {d.day}, {d.year}")
    elif loc == "en_GB":
        opts = [f"{d.day} {en} {d.year}", d.strftime("%d/%m/%Y"), d.isoformat()]
        opts.append(f"{d.day} {en[:3]} {d.year}")
    elif loc == "de_DE":
        opts = [d.strftime("%d.%m.%Y"), d.isoformat()]
        if native:
            opts.append(f"{d.day}. {MONTHS['de'][d.month - 1]} {d.year}")
    else:
        opts = [d.strftime("%d/%m/%Y"), d.isoformat()]
        if native:
            opts.append(f"{d.day} {MONTHS['fr'][d.month - 1]} {d.year}")
    return rng.choice(opts)


def rand(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


DIGITS = string.digits
UPPER = string.ascii_uppercase
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"


def passport_number(loc: str) -> str:
    """Passport-number shapes per issuing country (US, GB, DE, FR)."""
    if loc == "en_US":
        return (
            rand(DIGITS, 9)
            if rng.random() < 0.5
            else rand("ABCDEFGHJKLMNPRSTUVWXYZ", 1) + rand(DIGITS, 8)
        )
    if loc == "en_GB":
        return rand(DIGITS, 9)
    if loc == "de_DE":
        return rand("CFGHJK", 1) + rand("CFGHJKLMNPRTVWXYZ" + DIGITS, 8)
    return rand(DIGITS, 2) + rand(UPPER, 2) + rand(DIGITS, 5)


MRZ_STATE = {"en_US": "USA", "en_GB": "GBR", "de_DE": "D<<", "fr_FR": "FRA"}


def new_person(loc: str) -> Person:
    f = FAKERS[loc]
    sex = rng.choice("MF")
    first = str(f.first_name_male() if sex == "M" else f.first_name_female())
    dob: date = f.date_of_birth(minimum_age=18, maximum_age=85)
    issued = date(2016, 1, 1) + timedelta(days=rng.randrange(0, 3000))
    if issued.month == 2 and issued.day == 29:
        issued = issued.replace(day=28)
    return Person(
        first=first,
        last=str(f.last_name()),
        sex=sex,
        dob=dob,
        passport=passport_number(loc),
        mrz_state=MRZ_STATE[loc],
        expiry=issued.replace(year=issued.year + 10),
    )


@dataclass
class Ctx:
    loc: str
    faker: Faker
    person: Person
    native: bool  # template written in the locale's own language


def card(ctx: Ctx) -> str:
    raw = draw(ctx.faker.credit_card_number, luhn_ok)
    if len(raw) == 16:
        sep = rng.choice([" ", "-", "", " "])
        return sep.join(raw[i : i + 4] for i in range(0, 16, 4))
    if len(raw) == 15 and rng.random() < 0.6:
        return f"{raw[:4]} {raw[4:10]} {raw[10:]}"
    return raw


def iban(ctx: Ctx) -> str:
    loc = ctx.loc if ctx.loc != "en_US" else rng.choice(["en_GB", "de_DE", "fr_FR"])
    v = draw(FAKERS[loc].iban, iban_ok)
    if rng.random() < 0.5:
        v = " ".join(v[i : i + 4] for i in range(0, len(v), 4))
    return v


def ssn(ctx: Ctx) -> str:
    v = draw(FAKERS["en_US"].ssn, ssn_ok)
    if rng.random() < 0.15:
        v = v.replace("-", "")
    return v


def phone(ctx: Ctx) -> str:
    region = LOCALES[ctx.loc]
    return draw(ctx.faker.phone_number, lambda p: phone_ok(p, region))


FREE_MAIL = ["gmail.com", "outlook.com", "yahoo.co.uk", "web.de", "orange.fr", "proton.me",
             "icloud.com", "gmx.de"]  # fmt: skip


def email(ctx: Ctx) -> str:
    r = rng.random()
    if r < 0.4:
        return str(ctx.faker.email())
    if r < 0.7:
        return str(ctx.faker.company_email())
    p = ctx.person
    suffix = rng.choice(["", str(p.dob.year)[2:], str(rng.randint(1, 99))])
    first = mrz_name(p.first).lower().replace("<", "")
    last = mrz_name(p.last).lower().replace("<", "")
    return f"{first}{rng.choice(['.', '_', ''])}{last}{suffix}@{rng.choice(FREE_MAIL)}"


def ip(ctx: Ctx) -> str:
    r = rng.random()
    if r < 0.55:
        return str(ctx.faker.ipv4_public())
    if r < 0.8:
        return str(ctx.faker.ipv4_private())
    return str(ctx.faker.ipv6())


def ipv4(ctx: Ctx) -> str:
    return str(ctx.faker.ipv4_public() if rng.random() < 0.7 else ctx.faker.ipv4_private())


def aws_akid(ctx: Ctx) -> str:
    return "AKIA" + rand(UPPER + "234567", 16)


def aws_secret(ctx: Ctx) -> str:
    return rand(B64, 40)


def ghp(ctx: Ctx) -> str:
    return "ghp_" + rand(ALNUM, 36)


def slack(ctx: Ctx) -> str:
    return f"xoxb-{rand(DIGITS, 12)}-{rand(DIGITS, 13)}-{rand(ALNUM, 24)}"


def glpat(ctx: Ctx) -> str:
    return "glpat-" + rand(ALNUM + "-_", 20)


def b64url(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def jwt(ctx: Ctx) -> str:
    alg = rng.choice(["HS256", "RS256"])
    header = {"alg": alg, "typ": "JWT"}
    payload = {
        "sub": str(rng.randint(10**5, 10**7)),
        "name": f"{ctx.person.first} {ctx.person.last}",
        "iat": rng.randint(1_650_000_000, 1_720_000_000),
    }
    sig = bytes(rng.getrandbits(8) for _ in range(32 if alg == "HS256" else 64))
    parts = [json.dumps(header, separators=(",", ":")), json.dumps(payload, separators=(",", ":"))]
    return ".".join([*(b64url(p.encode()) for p in parts), b64url(sig)])


def rsa_block(ctx: Ctx) -> str:
    body = "MIIEpAIBAAKCAQEA" + rand(B64, 64 * rng.randint(5, 9) - 16)
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{lines}\n-----END RSA PRIVATE KEY-----"


WORDS = ["Maple", "tiger", "Orbit", "velvet", "Summer", "crane", "Falcon", "nova", "Pepper"]


def password(ctx: Ctx) -> str:
    if rng.random() < 0.5:
        sym = rng.choice(["!", "#", "$", "@", "_"])
        return f"{rng.choice(WORDS)}{sym}{rng.randint(10, 9999)}{rng.choice(WORDS)}"
    return rand(ALNUM + "!#%&*-_", rng.randint(14, 24))


def dob(ctx: Ctx) -> str:
    return fmt_date(ctx.person.dob, ctx.loc, ctx.native)


def mrz(ctx: Ctx) -> str:
    v = make_mrz(ctx.person)
    assert mrz_ok(v)
    return v


def other_date(ctx: Ctx) -> str:
    d = date(2023, 1, 1) + timedelta(days=rng.randrange(0, 900))
    return fmt_date(d, ctx.loc, ctx.native)


def isbn13() -> str:
    d = [9, 7, 8] + [rng.randint(0, 9) for _ in range(9)]
    chk = (10 - sum(x * (1 if i % 2 == 0 else 3) for i, x in enumerate(d)) % 10) % 10
    s = "".join(map(str, [*d, chk]))
    return f"{s[:3]}-{s[3]}-{s[4:7]}-{s[7:12]}-{s[12]}"


def not_luhn16() -> str:
    """16 digits in card grouping that fail the Luhn check (hard negatives)."""
    while True:
        s = rand(DIGITS, 16)
        if not luhn_ok(s):
            return " ".join(s[i : i + 4] for i in range(0, 16, 4))


def log_ts() -> str:
    month = rng.choice(["Jan", "Feb", "Mar", "Apr", "May", "Jun"])
    hms = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    return f"{rng.randint(1, 28):02d}/{month}/2024:{hms} +0000"


Maker = Callable[[Ctx], str]


def ctx_only(fn: Callable[[], str]) -> Maker:
    return lambda _ctx: fn()


# template field -> (span type, or None for context-only text, maker)
FIELDS: dict[str, tuple[str | None, Maker]] = {
    "email": ("email", email),
    "email2": ("email", email),
    "phone": ("phone", phone),
    "phone2": ("phone", phone),
    "card": ("card", card),
    "iban": ("iban", iban),
    "ssn": ("ssn", ssn),
    "passport": ("passport", lambda c: c.person.passport),
    "mrz": ("mrz", mrz),
    "ip": ("ip_address", ip),
    "ip2": ("ip_address", ip),
    "ipv4": ("ip_address", ipv4),
    "dob": ("date_of_birth", dob),
    "akid": ("secret", aws_akid),
    "awssecret": ("secret", aws_secret),
    "ghp": ("secret", ghp),
    "slack": ("secret", slack),
    "glpat": ("secret", glpat),
    "jwt": ("secret", jwt),
    "rsa": ("secret", rsa_block),
    "password": ("secret", password),
    # context-only fields (no span)
    "name": (None, lambda c: f"{c.person.first} {c.person.last}"),
    "first": (None, lambda c: c.person.first),
    "company": (None, lambda c: str(c.faker.company())),
    "city": (None, lambda c: str(c.faker.city())),
    "street": (None, lambda c: str(c.faker.street_address())),
    "zip": (None, lambda c: str(c.faker.postcode())),
    "uuid": (None, lambda c: str(c.faker.uuid4())),
    "date": (None, other_date),
    "order": (
        None,
        ctx_only(lambda: f"{rand('ABCDEFGHKMNPRSTWXZ', 1)}{rand(DIGITS, 5)}-{rand(DIGITS, 3)}"),
    ),
    "amount": (None, ctx_only(lambda: f"{rng.randint(12, 2400)}.{rng.randint(0, 99):02d}")),
    "pnr": (None, ctx_only(lambda: rand("ABCDEFGHJKLMNPQRSTUVWXYZ23456789", 6))),
    "flight": (
        None,
        ctx_only(lambda: rand("LBAUDKI", 1) + rand("AHFLBK", 1) + str(rng.randint(100, 9999))),
    ),
    "ts": (None, ctx_only(log_ts)),
    "port": (None, ctx_only(lambda: str(rng.choice([22, 443, 5432, 8080, 6379, 3306])))),
    "ver": (
        None,
        ctx_only(lambda: f"{rng.randint(1, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 12)}"),
    ),
    "ticket": (
        None,
        ctx_only(lambda: f"{rng.choice(['INC', 'SUP', 'HR', 'OPS'])}-{rng.randint(1000, 99999)}"),
    ),
    "sha": (None, ctx_only(lambda: rand("0123456789abcdef", 40))),
    "isbn": (None, ctx_only(isbn13)),
    "track": (None, ctx_only(lambda: "1Z" + rand(UPPER + DIGITS, 16))),
    "sku": (None, ctx_only(lambda: f"{rand(UPPER, 2)}-{rand(DIGITS, 3)}-{rand(DIGITS, 4)}")),
    "prodcode": (
        None,
        ctx_only(lambda: f"{rand(DIGITS, 3)}-{rand(DIGITS, 3)}-{rand(DIGITS, 4)}-{rand(UPPER, 1)}"),
    ),
    "noluhn": (None, ctx_only(not_luhn16)),
    "year": (None, ctx_only(lambda: str(rng.randint(1975, 2015)))),
    "pct": (None, ctx_only(lambda: f"{rng.randint(1, 99)}.{rng.randint(0, 9)}%")),
    "hex": (None, ctx_only(lambda: "#" + rand("0123456789ABCDEF", 6))),
}


# ----------------------------------------------------------------- templates
# (template, allowed locales or None for any)
ANY = None
US = ("en_US",)
EN = ("en_US", "en_GB")
DE = ("de_DE",)
FR = ("fr_FR",)

POSITIVE = [
    ("Can you update my card {card} on file? The old one expired last month.", ANY),
    ("hey, my card ending is wrong on the invoice, full number is {card}, exp 09/27. pls fix", ANY),
    (
        "I was charged twice for order {order}. I paid with {card}. Can you refund one of them to the same card?",
        ANY,
    ),
    (
        "Please draft an email to HR: my new bank details for payroll are IBAN {iban}, effective next month. My employee email is {email}.",
        ANY,
    ),
    (
        "Subject: Change of address\n\nHi team,\nI've moved to {street}, {city}. You can reach me on {phone} or {email}.\nThanks, {first}",
        ANY,
    ),
    ("my SSN is {ssn}, do I put it on the W-4 or does HR already have it?", US),
    (
        "Fill in this form for me:\nName: {name}\nDate of birth: {dob}\nSSN: {ssn}\nPhone: {phone}",
        US,
    ),
    (
        "I'm applying for a rental in {city}. The landlord wants my SSN ({ssn}) and date of birth ({dob}) for a credit check. Is that normal?",
        US,
    ),
    (
        "Booking for {name}, flight {flight} on {date}. Passport number {passport}, nationality as on passport, born {dob}. Booking ref {pnr}.",
        ANY,
    ),
    (
        "Can you check if this passport is still valid? Number {passport}, I think it expires next year.",
        ANY,
    ),
    (
        "The OCR pulled this from the passport scan:\n{mrz}\nCan you tell me the expiry date and nationality?",
        ANY,
    ),
    ("Parse this MRZ and return the fields as JSON:\n{mrz}", ANY),
    (
        "Hotel check-in record: guest {name}, passport {passport}, MRZ:\n{mrz}\nroom 412, 3 nights.",
        ANY,
    ),
    (
        'Why is this IP hammering our login endpoint? {ip} - - [{ts}] "POST /login HTTP/1.1" 401 92',
        ANY,
    ),
    (
        'nginx log excerpt:\n{ip} - - [{ts}] "GET /api/v2/orders HTTP/1.1" 200 1534 "-" "Mozilla/5.0"\n{ip2} - - [{ts}] "GET /admin HTTP/1.1" 403 162 "-" "curl/{ver}"\nIs the second request suspicious?',
        ANY,
    ),
    (
        "Our DB at {ipv4}:{port} is refusing connections from the app server {ip2}. Security group issue?",
        ANY,
    ),
    (
        "sshd[2211]: Failed password for invalid user admin from {ip} port 51422 ssh2 — how many of these before fail2ban kicks in?",
        ANY,
    ),
    (
        "I accidentally committed this .env, how bad is it?\n\nAWS_ACCESS_KEY_ID={akid}\nAWS_SECRET_ACCESS_KEY={awssecret}\nAWS_REGION=eu-west-1",
        ANY,
    ),
    (
        "My CI keeps failing with 401. Here's the config: GITHUB_TOKEN={ghp} and NODE_ENV=production. What's wrong?",
        ANY,
    ),
    (
        "The Slack bot stopped posting. Token is {slack}, scopes chat:write and channels:read. Any idea?",
        ANY,
    ),
    ("git clone https://oauth2:{glpat}@gitlab.example.com/team/app.git fails with 403, why?", ANY),
    ("Decode this JWT and tell me when it expires: {jwt}", ANY),
    ("Found this in a public gist, is it a real key?\n{rsa}", ANY),
    ('config.py has password = "{password}" hardcoded, how do I move it to a vault?', ANY),
    (
        "settings.yaml:\n  db:\n    host: {ipv4}\n    user: app\n    password: \"{password}\"\nWhy does the app log 'authentication failed'?",
        ANY,
    ),
    (
        "Authorization: Bearer {jwt}\nThe API returns 'token invalid'. Is the alg header the problem?",
        ANY,
    ),
    (
        "Here's my deploy script, review it please:\nexport GITLAB_TOKEN={glpat}\nexport SLACK_TOKEN={slack}\n./deploy.sh --env prod",
        ANY,
    ),
    ("Please remember my details for next time: {name}, born {dob}, phone {phone}.", ANY),
    (
        "I need a GP appointment next week. Patient: {name}, born on {dob}. Please call me back at {phone}.",
        ANY,
    ),
    ("Write a cover letter for me. Contact: {email} | {phone} | {city}", ANY),
    ("Transfer {amount} EUR to my landlord, IBAN {iban}, reference 'rent {date}'.", ANY),
    ("Can you check if this IBAN is correct before I send the deposit? {iban}", ANY),
    (
        "New supplier onboarding: {company}, contact {email}, payment to {iban}, VAT invoice monthly.",
        ANY,
    ),
    ("Forward this to {email2}: 'Hi, please call {first} on {phone} about ticket {ticket}.'", ANY),
    (
        "Text from my bank: 'Suspicious payment of {amount} on card {card}. Reply Y if this was you.' Is this a scam?",
        ANY,
    ),
    ("Reset request: user {email} from IP {ip}, DOB on file {dob}. Approve?", ANY),
    (
        "Customer record #{ticket}\nName: {name}\nEmail: {email}\nPhone: {phone}\nCard: {card}\nNotes: prefers email contact",
        ANY,
    ),
    (
        "Travel insurance claim: policy holder {name}, passport {passport}, date of birth {dob}, bank account {iban} for the payout.",
        ANY,
    ),
    ("my passport ({passport}) was stolen in {city} yesterday, which embassy form do I need?", ANY),
    (
        "Visa application: applicant DOB {dob}, passport no. {passport}, email {email}. What documents are missing?",
        ANY,
    ),
    (
        "You can reach our on-call engineer at {phone} or {phone2} if the first doesn't pick up.",
        ANY,
    ),
    (
        "For the tax return: SSN {ssn}, spouse SSN {ssn}, both born before 1990 — does that matter?",
        US,
    ),
    (
        "Our pentest report mentions leaked keys: {akid} in a JS bundle and {ghp} in a Docker layer. Priority?",
        ANY,
    ),
    (
        "Hi! My birthday is {dob}, can you tell me my zodiac sign and a fun fact about that day?",
        ANY,
    ),
    (
        'Please summarize this email:\n"From: {email}\nHi {first}, the contractor\'s number is {phone}. Invoice to {iban}. Cheers"',
        ANY,
    ),
    ("Is this MRZ valid? The check digits look off to me:\n{mrz}", ANY),
    (
        "The border kiosk rejected my passport. The bottom of the photo page reads:\n{mrz}\nWhat could be wrong?",
        ANY,
    ),
    ("Extract surname, given names and date of birth from this:\n{mrz}", ANY),
    ("Kannst du diese maschinenlesbare Zone auslesen?\n{mrz}", DE),
    ("Is {ssn} a valid SSN format? It's mine, I'm filling out the FAFSA.", US),
    (
        "Please redact the Social Security number {ssn} from this letter before I mail it to the insurer.",
        US,
    ),
    (
        "Bitte aktualisiere meine Bankverbindung: IBAN {iban}. Bei Fragen erreichen Sie mich unter {phone}.",
        DE,
    ),
    (
        "Mein Geburtsdatum ist {dob}, meine Reisepassnummer {passport}. Reicht das für die Online-Buchung?",
        DE,
    ),
    (
        "Hallo, bitte die Rechnung an {email} schicken, Rückfragen gern telefonisch unter {phone}.",
        DE,
    ),
    ("Bonjour, voici mon RIB : {iban}. Vous pouvez me joindre au {phone}.", FR),
    (
        "Je suis né le {dob}, mon numéro de passeport est {passport}. Pouvez-vous vérifier ma réservation ?",
        FR,
    ),
    ("Merci d'envoyer la facture à {email} et de débiter la carte {card}.", FR),
    ("Call me on {phone} when the parcel arrives, tracking {track}.", EN),
    ("My DOB is {dob} and my card number is {card}. Why was my online order declined?", ANY),
]

NOISE = [
    "Where is my order {order}? The tracking page hasn't updated since Tuesday.",
    "We upgraded the service from {ver} to 2.14.1 and now the health check fails.",
    "Is Python 3.11.4 compatible with numpy {ver}?",
    "The total came to {amount} EUR including VAT, is that right for 3 items?",
    "Can you find the book with ISBN {isbn}? I think it's a cookbook.",
    "UPS tracking {track} says 'label created' for five days now.",
    "The part number on the washing machine is {prodcode}, where can I buy a replacement?",
    "SKU {sku} is out of stock again, can we reorder 40 units?",
    "Our quarterly meeting is on {date} at 10:00 in room B-214.",
    "The invoice dated {date} is still unpaid; can you draft a polite reminder?",
    "The deadline for the grant application is {date}, can you make me a countdown plan?",
    "Commit {sha} broke the build, can you explain what git bisect would do here?",
    "Request id {uuid} timed out after 30s, what does a 504 from the load balancer mean?",
    "Conversion went up {pct} after we changed the button color to {hex}.",
    "Our office is at postcode {zip}; what's the nearest train station?",
    "Ticket {ticket} was closed without a fix, how do I reopen it?",
    "The reference on the bank statement is {noluhn}, but I don't recognise the merchant name. Is it a subscription?",
    "The gift card code on the back is {noluhn} — it's from a store promo, how do I redeem it online?",
    "The company was founded on {date} in a garage in {city}.",
    "Error E-4021 appears on the dishwasher display after 12 minutes, what does it mean?",
    "Patch 1.38.2 reset all my controller settings, how do I restore them?",
    "I'm thinking of a number between 1 and 1000000, it's 482913. Can you guess the next one in the sequence?",
    "Set the timeout to 3600 seconds and the retry count to 5.",
    "Flight {flight} is delayed until 18:45, what are my rights for compensation?",
    "Build {ver}-rc2 failed on the ARM runner but not on x86, any ideas?",
    "The recipe says 180 C for 45 minutes, how long in a fan oven?",
    "I sold 2,450 units in March at 19.99 each, what's my revenue?",
    "Server responded with HTTP 429 after 1200 requests per minute. Rate limiting?",
    "The model number is XR-7721-B and the serial is 00412 8830 551, is it still under warranty?",
    "Room 4.12 in building 7 is booked for the workshop on {date}.",
    "Our API listens on port {port}; should I put it behind a reverse proxy?",
    "Chapter 3.2.1 of the manual covers calibration, can you summarize it?",
    "GPS coordinates 48.8566, 2.3522 — what's near there?",
    "My bike lock code is easy to forget, any tips for remembering 4-digit numbers?",
    "The meeting ID for the call is 842 5531 9027 and the passcode is on the invite.",
    "Rechnung Nr. {order} vom {date} ist noch offen, bitte prüfen.",
    "Commande n° {order} : le colis n'est toujours pas arrivé, que faire ?",
    "The lottery numbers this week were 4, 17, 23, 31, 42 and 45.",
    "Tax rate changed from 19% to 16% between July and December {year}, how does that affect old invoices?",
    "Password requirements: at least 12 characters, one number and one symbol. Is that enough?",
    "What does 'AKIA' mean at the start of an AWS key? Just curious, I don't have one to share.",
    "How do I generate a GitHub personal access token with only repo scope?",
    "What is the format of a German IBAN? How many digits does it have?",
    "Do UK passports still have 9-digit numbers?",
    "Explain what an MRZ on a passport is and how the check digits work.",
    "Which IP address ranges are reserved for private networks?",
    "How do I validate a credit card number with the Luhn algorithm in Python?",
    "The product code 555-0100 on the box looks like a phone number, weird right?",
    "My daughter's birthday party is on {date}, can you suggest a cake design?",
    "I bought this laptop on {date} — is it still within the 2-year warranty?",
    "Version 10.4.2 of the firmware fixed the Wi-Fi bug.",
    "The exhibition runs until {date}; tickets are {amount} per adult.",
    "I got an email from a prince asking for my bank details. Obviously a scam, but how do I report it?",
    "Can you anonymize a dataset so that no names, emails or phone numbers remain?",
    "Order {order} contains 3 items: SKU {sku}, SKU {sku}, and a gift wrap.",
    "The error code 0x80070005 keeps appearing when I update Windows.",
    "Our Docker image is tagged {ver} and the Helm chart is 0.9.14.",
    "Patch notes {ver}: fixed memory leak, improved startup time by {pct}.",
    "The apartment is 74 m², rent is 1,150 per month, deposit three months.",
]


# ------------------------------------------------------------------ renderer
FIELD_RE = re.compile(r"\{(\w+)\}")
Span = dict[str, int | str]


def render(template: str, loc: str, native: bool = False) -> tuple[str, list[Span]]:
    """Fill a template; return the text and the exact spans of typed fields."""
    ctx = Ctx(loc=loc, faker=FAKERS[loc], person=new_person(loc), native=native)
    out: list[str] = []
    spans: list[Span] = []
    pos = n = 0
    for m in FIELD_RE.finditer(template):
        lit = template[pos : m.start()]
        out.append(lit)
        n += len(lit)
        typ, fn = FIELDS[m.group(1)]
        val = fn(ctx)
        if typ:
            spans.append({"start": n, "end": n + len(val), "type": typ})
        out.append(val)
        n += len(val)
        pos = m.end()
    out.append(template[pos:])
    return "".join(out), spans


VALIDATORS: dict[str, Callable[[str, str], bool]] = {
    "card": lambda v, _r: luhn_ok(v),
    "iban": lambda v, _r: iban_ok(v),
    "ssn": lambda v, _r: ssn_ok(v),
    "phone": phone_ok,
    "mrz": lambda v, _r: mrz_ok(v),
}


def check(text: str, spans: list[Span], loc: str) -> None:
    last = 0
    for s in spans:
        start, end, typ = int(s["start"]), int(s["end"]), str(s["type"])
        assert typ in TYPES
        assert last <= start < end <= len(text), (text, spans)
        last = end
        v = text[start:end]
        assert v == v.strip(), (text, s)
        ok = VALIDATORS.get(typ)
        assert ok is None or ok(v, LOCALES[loc]), (typ, v, loc)
    assert not FIELD_RE.search(text), text  # no unfilled template fields


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    target = os.path.join(here, "..", "..", "vsr_extproc", "eval", "data", "pii.jsonl")
    ap = argparse.ArgumentParser(description="Write the PII development set (pii.jsonl).")
    ap.add_argument("-o", "--output", default=os.path.normpath(target))
    args = ap.parse_args()
    locs = list(LOCALES)
    records: list[tuple[str, list[Span], str]] = []
    # Positive sentences: cycle through the templates so each is used evenly.
    order = list(range(len(POSITIVE)))
    for i in range(N_POSITIVE):
        if i % len(order) == 0:
            rng.shuffle(order)
        tpl, allowed = POSITIVE[order[i % len(order)]]
        loc = rng.choice(list(allowed) if allowed else locs)
        text, spans = render(tpl, loc, native=allowed in (DE, FR))
        records.append((text, spans, loc))
    # Noise sentences: PII-looking but no spans.
    for j in range(N_NOISE):
        tpl = NOISE[j % len(NOISE)]
        if "Rechnung" in tpl:
            loc, native = "de_DE", True
        elif "Commande" in tpl:
            loc, native = "fr_FR", True
        else:
            loc, native = rng.choice(["en_US", "en_GB"]), False
        text, _ = render(tpl, loc, native)
        records.append((text, [], loc))
    rng.shuffle(records)
    seen: set[str] = set()
    uniq: list[tuple[str, list[Span], str]] = []
    for text, spans, loc in records:
        if text in seen:
            continue
        seen.add(text)
        check(text, spans, loc)
        uniq.append((text, spans, loc))
    with open(args.output, "w", encoding="utf-8") as f:
        for text, spans, loc in uniq:
            row = {"text": text, "spans": spans, "locale": loc}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    types = Counter(str(s["type"]) for _, spans, _ in uniq for s in spans)
    n_pos = sum(1 for _, spans, _ in uniq if spans)
    print(f"wrote {len(uniq)} records to {args.output}")
    print(f"  with spans: {n_pos}, without spans: {len(uniq) - n_pos}")
    print(f"  locales: {dict(Counter(loc for _, _, loc in uniq))}")
    for t in TYPES:
        print(f"  {t:14s} {types[t]}")
    short = [t for t in TYPES if types[t] < 25]
    if short:
        print("ERROR: types with fewer than 25 spans:", short, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
