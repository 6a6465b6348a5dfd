"""Credentials in prompts: tokens of each kind, assignments, and look-alikes that stay."""

from __future__ import annotations

import base64
import json

import pytest

from vsr_extproc.detectors import FindingType, find_pii, find_secrets


def b64url(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


JWT = (
    b64url({"alg": "HS256", "typ": "JWT"})
    + "."
    + b64url({"sub": "1234567890", "name": "John Doe", "iat": 1516239022})
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HECdnH\n"
    "lWu2/a1gB9JW5TBQ+AVpum9Okx7KfqkfBKL9mcHgSL0yWMdjMfNOqNtrQqKlN4kE\n"
    "-----END RSA PRIVATE KEY-----"
)
OPENSSH_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


def secrets_in(text: str) -> list[tuple[str, str]]:
    """(detail, value) of each secret found."""
    return [(f.detail, text[f.start : f.end]) for f in find_secrets(text)]


TOKENS = [
    ("aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_access_key", "ASIAY34FZKBOKMUTVV7A"),
    ("github_token", "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5"),
    ("github_token", "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a"),
    ("github_token", "ghs_" + "16C7e42F292c6912E7710c838347Ae178B4a"),
    ("github_token", "github_pat_11ABCDEFG0123456789abc_" + "x" * 59),
    ("gitlab_token", "glpat-xYz12AbC34dEf56GhI78"),
    ("slack_token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("slack_token", "xoxp-123456789012-123456789012-123456789012-abcdef0123456789abcdef0123456789"),
    ("google_api_key", "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"),
    ("stripe_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("stripe_key", "rk_live_51H8bUqF2eZvKYlo2C0aBcDeF"),
    ("jwt", JWT),
    ("private_key", PRIVATE_KEY),
    ("private_key", OPENSSH_KEY),
    ("openai_key", "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5kL7nP9rS1uW3"),
    ("openai_key", "sk-" + "T3BlbkFJ4eC39HqLyjWDarjtT1zdp7dc9Xk2"),
    ("anthropic_key", "sk-ant-api03-" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5kL7nP9rS1uW3" + "AA"),
    ("npm_token", "npm_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5"),
    ("huggingface_token", "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH"),
    (
        "sendgrid_key",
        "SG." + "aB3dE5gH7jK9mN1pQ3sT5v" + "." + "W7yZ9bC1eF3hJ5kL7nP9rS1uW3xY5zA7cE9gI1kM3oQ",
    ),
]


@pytest.mark.parametrize(
    ("detail", "token"), TOKENS, ids=[f"{d}-{i}" for i, (d, _) in enumerate(TOKENS)]
)
def test_tokens_of_each_kind(detail: str, token: str) -> None:
    text = f"here is my credential:\n{token}\nplease keep it safe"
    findings = find_secrets(text)
    assert [(f.detail, text[f.start : f.end]) for f in findings] == [(detail, token)]
    assert findings[0].confidence >= 0.9
    assert token not in findings[0].detail


def test_private_key_cut_off_before_its_end_line_is_still_a_secret() -> None:
    truncated = PRIVATE_KEY.rsplit("\n", 1)[0]
    text = f"{truncated}\n\nwhat is this file?"
    [finding] = find_secrets(text)
    assert text[finding.start : finding.end] == truncated


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('password = "hunter2abc"', [("password", "hunter2abc")]),
        ("DB_PASSWORD=S3cr3t!pw", [("password", "S3cr3t!pw")]),
        ("passwd: Tr0ub4dor&3", [("password", "Tr0ub4dor&3")]),
        ('{"user": "bob", "password": "pa55word!"}', [("password", "pa55word!")]),
        ("spring.datasource.password=Xy7_abc99", [("password", "Xy7_abc99")]),
        ("api_key=0123456789abcdef0123", [("api_key", "0123456789abcdef0123")]),
        ("export OPENAI_API_KEY='sk-proj-abc123def456'", [("api_key", "sk-proj-abc123def456")]),
        ('client_secret: "8f7d6e5c4b3a2918"', [("secret", "8f7d6e5c4b3a2918")]),
        ("access_token := 'ya29.a0AfH6SMB'", [("token", "ya29.a0AfH6SMB")]),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            [("aws_secret_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")],
        ),
        ("postgres://admin:s3cretPass@db.internal/app", [("url_password", "s3cretPass")]),
        (
            "Authorization: Bearer abcDEF123456ghiJKL789012",
            [("bearer_token", "abcDEF123456ghiJKL789012")],
        ),
        (f"token = {JWT}", [("jwt", JWT)]),
        # "%S" in a random password is not a template's "%s"
        ('SECRET_KEY = "Z%SQw*W0IQ0kN!tHq4a71"', [("secret", "Z%SQw*W0IQ0kN!tHq4a71")]),
    ],
)
def test_assignments_report_the_value(text: str, expected: list[tuple[str, str]]) -> None:
    assert secrets_in(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "AKIA is the prefix AWS uses for access key ids.",
        "AKIAIOSFODNN7EXAMPL is one character short",
        "ghp_ tokens are 40 characters long",
        "the header eyJhbGciOi... starts every JWT",
        b64url({"foo": "bar"}) + "." + b64url({"sub": "1"}) + ".c2lnbmF0dXJl",
        "eyJub3QganNvbiBhdCBhbGw." + b64url({"sub": "1"}) + ".c2lnbmF0dXJl",
        "xoxb-not-a-token",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----",
        'password = "abc"',
        'password = "<password>"',
        'password = "********"',
        "password: changeme",
        'password = "${DB_PASSWORD}"',
        'password = "%s-%s-%s"',
        "db_password: %(password)s",
        'password = "your_password"',
        'PASSWORD = os.environ["DB_PASSWORD"]',
        "password = settings.DB_PASSWORD",
        "password = get_password()",
        "password = new_password",
        'if password == "hunter2abc":',
        '"password": "string"',
        'label = "Enter your password"; password_label: "Your password"',
        "Password: required",
        "I forgot my password: can you help me reset it?",
        "The secret: happiness is a choice.",
        "He took the pass: the mountain road was closed.",
        "The compass=north setting and bypass=enabled flag",
        "max_tokens = 4096",
        "the bearer of bad news",
        "sk-learn is a common misspelling of scikit-learn",
        "the task-runner and the desk-booking-service-v2 both restarted",
        "hf_hub_download(repo_id=repo)",
    ],
)
def test_lookalikes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_secrets_are_part_of_find_pii() -> None:
    text = "key AKIAIOSFODNN7EXAMPLE and mail me at ops@example.com"
    assert [f.type for f in find_pii(text)] == [FindingType.SECRET, FindingType.EMAIL]
    assert [f.type for f in find_pii(text, [FindingType.SECRET])] == [FindingType.SECRET]


def test_email_inside_a_password_value_is_one_secret() -> None:
    text = 'password = "bob@example.com!9"'
    assert [(f.type, f.detail) for f in find_pii(text)] == [(FindingType.SECRET, "password")]


def test_token_in_a_url_is_a_secret_not_an_email() -> None:
    token = "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5"
    text = f"git clone https://user:{token}@github.com/org/repo.git"
    assert [(f.type, text[f.start : f.end]) for f in find_pii(text)] == [
        (FindingType.SECRET, token)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "What does -----BEGIN RSA PRIVATE KEY----- at the top of a file mean?",
        "A key looks like -----BEGIN PRIVATE KEY----- ... -----END PRIVATE KEY-----.",
    ],
)
def test_private_key_markers_without_a_body_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_deeply_nested_jwt_payload_does_not_break_detection() -> None:
    payload = base64.urlsafe_b64encode(b"[" * 50_000).rstrip(b"=").decode()
    text = b64url({"alg": "none"}) + "." + payload + ".sig"
    assert [f.detail for f in find_secrets(text)] == ["jwt"]


def test_an_azure_connection_string_reveals_its_account_key() -> None:
    key = "Zm9vYmFyYmF6cXV4" * 5 + "AbCd=="
    text = f"DefaultEndpointsProtocol=https;AccountName=prodlogs;AccountKey={key};EndpointSuffix=x"
    (finding,) = find_secrets(text)
    assert text[finding.start : finding.end] == key


# --- text read from a screenshot by OCR ----------------------------------------------------

from vsr_extproc.detectors import find_secrets_in_read_text  # noqa: E402

READ = {
    # digits read for letters in the key's name
    "key-digits": 'SLACK_B0T_T0KEN = "xoxb-52641301322-32067060670-noXMGVavm9kDItk3msIxQ6Al"',
    "key-y-as-v": 'OPENAI_API_KEV = "Hq7vP2xLm9Qe4Rt8Zs1WbN6yKd3FgJ0c"',
    # a space read inside a token
    "aws-split": "AWS_ACCESS_KEY_ID=AKIA7 BUG8FNC71FQMZM2",
    "openai-split": 'OPENAI_API_KEY = "sk-proj -86lBclDks33PdIjwvAwkcNKfCLMAQ1506m56ngSzJLFZrSvR"',
    # a token's prefix misread
    "slack-prefix": "slack_bot_token: x0xb -61411735841-22166287049-oPh8isTXTXJpbVUTlXbZGxbA",
    # the editor's window cut the value off: no closing quote
    "cut-off": 'SESSION_TOKEN = "' + JWT[:70],
    # a terminal wrapped the line, and read the dot with spaces around it
    "wrapped": "export SESSION_TOKEN="
    + JWT[:59]
    + "\n"
    + JWT[59:139].replace(".", " . ", 1)
    + "\n"
    + JWT[139:]
    + "\nexport LOG_LEVEL=info",
    # a database URL with spaces read into its scheme, around "://" and in its password
    "url-spaces": "DATABASE_URL=po stg re s : // app:Ye yCsghbp2JpPE@db .inte rnal:5432/app",
    "url-colon-space": "db_url: mysql: / /root: 9K9470ZhjZ2r@10 .0.3.81/shop",
    # ... and with its "@" read as "a"
    "url-at-as-a": 'DB_URL = "mysql://root:AVLZgXDhj6RMa10.0.7.192/shop"',
    "url-at-as-a-host": "DATABASE_URL=postgres: //app:D9p8v5y09ICvYZadb.internal:5432/app",
    # a space read inside a quoted password full of symbols
    "symbols-split": 'SECRET_KEY = "iWr6WzXPn8BXx1@HnXeda!Q3jHjVrvpxCbyA5!s6!eJ#Ai *WWo"',
    # an unquoted JWT cut off by the window's edge after its payload's first characters
    "jwt-cut": "SESSION_TOKEN=" + JWT[: JWT.index(".") + 12],
    # a JWT whose header OCR garbled ("typ" encoded "dHlw", read "dHLw"): no JSON, its shape
    "jwt-header-misread": "SESSION_TOKEN=" + JWT.replace("dHlw", "dHLw", 1),
    # an editor wrapped a connection string inside its key's name, in its quotes
    "editor-wrapped-string": 'LOG_LEVEL = "info"\nAZURE_STORAGE_CONNECTION_STRING = '
    '"DefaultEndpointsProtocol=https;AccountName=assets01;Acc\nountKey=dt2M38TaDDIJX2JLIg8m'
    "93t2ihJz0y+2cYQ6syPLFswLsoYwLSJ0z33jgaX6VXpmyQeHiaYpmtBP/8IzPI18p+=;EndpointSuffix=core."
    'windows.net"\nREGION = "us-east-2"',
    # spaces read inside a token, around a short piece ("-_Yhf")
    "spaced-short-piece": 'OPENAI_API_KEY = "sk-proj -_Yhf jmtNpX-4Y3FmQ6JQSnSveGwZDrbhIPLf"',
    # ... and a secret's value read in pieces that are not all token-like
    "spaced-quoted-value": 'GOOGLE_API_KEY = "AI zaG H4mAFtu BVo YMZ-QoG YKNPP sMzTTmB0LBAR"',
    "spaced-prefix": 'GITLAB_TOKEN = "glpat -bbcz_KKIfNgqc2VUkEhm"',
    "spaced-bare-value": "SENDGRID_API_KEV=SG. aShMdxptPIx - IWCa0EKNiq. 42MVe_85s 3Szm3ThEQIv",
    # a space read inside the key's name
    "spaced-key": "db_pas sword: X8pZUkfbJg!15",
    # a string's closing quote lost, and the next line a statement of its own
    "quote-lost": 'SLACK_B0T_T0KEN = "x0xb-89966614644-73643056290-PPTYIbf4XVIzd750G42E4Pvo\n'
    'CACHE_TTL = "446"',
    # an editor's numbered line wrapped, the numbers glued to the lines
    "numbered-wrap": "1LOG_LEVEL=info\n2REGION=eu-west-1\n3P0RT=8080\n"
    "4AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=assetsO1;Accoun"
    "\ntKey=1Z6XM6K/2TGckb0vy9yf+i8gPP3/on56iMYNqvdXMs7sKuZ0F6zsD6838yIvI57qS/9aAMKbUGP7sN/FKS"
    "RfPQ==;EndpointSuffix=core.windows.net\n5FEATURE_FLAGS=search,beta-ui\n6CACHE_TTL=443",
    # ... and the wrapped part going on with digits, which are no line number
    "numbered-wrap-digits": "1LOG_LEVEL=info\n2REGION=eu-west-1\n3P0RT=8080\n"
    "4AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=assetsO1;AccountKey=1"
    "\n26XM6K/2TGckb0vy9yf+i8gPP3/on56iMYNqvdXMs7sKuZ0F6zsD6838yIvI57qS/9aAMKbUGP7sN/FKS"
    "RfPQ==;EndpointSuffix=core.windows.net\n5FEATURE_FLAGS=search,beta-ui\n6CACHE_TTL=443",
    # a PEM marker with its dashes miscounted
    "pem-dashes": PRIVATE_KEY.replace("-----BEGIN", "--BEGIN").replace("Y-----\nM", "Y--\nM"),
}


@pytest.mark.parametrize("text", READ.values(), ids=READ.keys())
def test_credentials_misread_by_ocr_are_still_found(text: str) -> None:
    assert find_secrets_in_read_text(text), text


@pytest.mark.parametrize(
    "text",
    [
        'prompt = "Enter your password"',  # words with spaces: a label, not one token
        "4 Secret_key: none\n5 region: eu-west-1",  # a gutter number is not glued to a key
        "checksum = 9f86d081 884c7d65 9a2feaa0 c55ad015",  # a hash is not a secret
        "request_id: 550e8400-e29b-41d4-a716-446655440000\nuser: 42",
        "version = 1.0 build 8080 port 8443",
        # URLs with a port, a path or an "@" in their path, and words before a scheme
        "see https: //example.com:8080/a and http://host.example.org/path",
        "proxy: http://proxy.corp:3128\nredis://cache.internal:6379/0",
        "https://maps.google.com/@37.7,-122.4 and http://localhost:abc/data.json",
        "token = auth.session.refresh_token",  # code, not a value
        # words and a token after a secret's key: a label, however OCR spaced it
        "password: see the vault entry db-prod-01",
        'password = "my first dog Rex 2"',
        # a line between numbers that do not count up is no wrapped line: "AKIA" at the end
        # of one line and the rest of a key on the next stay apart
        "1 the access key id prefix for this account is AKIA\nIOSFODNN7EXAMPLE is the sample"
        "\n7 pears\n30 grapes",
        # a sentence that opens a quote on one line and closes it on the next
        'He wrote "the deployment for customer accounts\nfinished" and the password policy',
    ],
)
def test_repairing_what_ocr_read_raises_no_false_alarm(text: str) -> None:
    assert find_secrets_in_read_text(text) == [], text


def test_a_token_on_the_longest_line_is_not_joined_to_the_next_key() -> None:
    """The longest line is not wrapped onto a next line that starts with a key of its
    own: joined, the token would run on into ``APP_ENV`` and no longer end where a token
    ends."""
    token = "sk_live_4eC39HqLyjWDarjtT1zdp7dcQ8rT2xW9aB3dE5gH7jK9mN1pQ3sT"
    text = f"LOG_LEVEL=info\nSTRIPE_KEY={token}\nAPP_ENV=production\nPORT=8080"
    assert [finding.detail for finding in find_secrets_in_read_text(text)] == ["stripe_key"]
