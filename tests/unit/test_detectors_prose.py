"""Passwords and PINs told in sentences (``detectors.prose``), through ``find_pii``, and the
``eval pii`` slice of them."""

from __future__ import annotations

import pytest

from vsr_extproc.detectors import FindingType, find_pii


def _secrets(text: str) -> list[str]:
    return [text[f.start : f.end] for f in find_pii(text, {FindingType.SECRET})]


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        ("my password is Tr0ub4dor&3, can you check why it fails?", ["Tr0ub4dor&3"]),
        ("I reset the pw to Tr0ub4dor&3 yesterday and the app still refuses it", ["Tr0ub4dor&3"]),
        ("The password I was given at onboarding was monkey6528, and it expired.", ["monkey6528"]),
        (
            "When the installer asks, enter Charlie1987* as the administrator password.",
            ["Charlie1987*"],
        ),
        ("Log in with password 'r0ck3t16' on the conference room PC.", ["r0ck3t16"]),
        ("Mein Passwort ist jetzt Xy7#pQ2!, bitte nicht weitergeben.", ["Xy7#pQ2!"]),
        ("Le mot de passe du wifi est b3ll430.", ["b3ll430"]),
        # the user's name beside it is not a secret
        (
            "Your username is user_1ItZ4 and your temporary password is 6uZudk7AfSXt.",
            ["6uZudk7AfSXt"],
        ),
        ("The code for the door is 4821, press enter after.", ["4821"]),
        ("My card PIN is 070814 and the machine keeps it.", ["070814"]),
    ],
)
def test_a_password_or_pin_told_in_a_sentence_is_a_secret(text: str, secrets: list[str]) -> None:
    assert _secrets(text) == secrets


@pytest.mark.parametrize(
    "text",
    [
        "The password must be at least 12 characters and include 1 symbol such as ! or #.",
        "My wifi password does not work with my iPhone15 since iOS 17.2.",  # a product
        "My password expires on 2025-03-01, should I change it before?",
        "I opened ticket INC-48213 about my password last week.",
        "After the 4.2.1 update my password fails.",
        "Mon mot de passe expire le 15/04/2025, dois-je le changer avant ?",
        "¿Olvidaste tu contraseña? Ingrese su dirección de correo.",
        "Registrant Postal Code: 45103",  # a code that is no PIN
        "NoUpgrade = etc/passwd etc/group etc/shadow",  # a path
        "Change the password of the user to new_password.",  # an identifier
        "The password field is <input type=password name=pw>.",  # markup
        "Please pin the 2.0 release and remind me of my PIN letter from 12 May.",
    ],
)
def test_text_about_passwords_without_one_holds_no_secret(text: str) -> None:
    assert _secrets(text) == []


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        ("log in with Tr0ub4dor&3 and change it once you're in", ["Tr0ub4dor&3"]),
        ("it's admin / Kq8#mLp2x for the router page", ["Kq8#mLp2x"]),
        ("the staging box: the admin login is root:monkey4043", ["monkey4043"]),
        ("I typed f4lc0n36 three times and now I'm locked out", ["f4lc0n36"]),
        ("netflix: mum@example.org Summer1997* (don't buy films)", ["Summer1997*"]),
        ("Für den Büro-PC: Benutzer empfang, danach Xy7#pQ2!k eingeben.", ["Xy7#pQ2!k"]),
        ("tried Kq8#mLp2xZ and it still refuses", ["Kq8#mLp2xZ"]),  # strong, no other word
        # "İ" lower-cases to two characters: the text is then read as written
        ("İstanbul ofisi: log in with Kq8#mLp2x, please", ["Kq8#mLp2x"]),
        ("The safe in the back office opens with 4708. Lock it again, please.", ["4708"]),
        ("Garage door keypad: 190283, then enter.", ["190283"]),
        # a user's name told first, then the secret, in any words
        ("Hola, no puedo entrar. Usuario: lgarcia, y le doy a Tr0ub4dor&3 y nada", ["Tr0ub4dor&3"]),
        ("the Windows login is lemon#6218 and I need the photos off it", ["lemon#6218"]),
        # a PIN in a sentence about a card or a lock that failed or was set
        ("the hotel safe won't open, I set it to 82619838 last night", ["82619838"]),
        ("El cajero me dice que 28889 es incorrecto, ¿me bloquearán la tarjeta?", ["28889"]),
    ],
)
def test_a_credential_no_word_names_is_found_where_it_stands(text: str, secrets: list[str]) -> None:
    assert _secrets(text) == secrets


@pytest.mark.parametrize(
    "text",
    [
        "Can't log in as jdoe_42 since this morning, getting ERR_CONNECTION_RESET",
        "use SAVE20 at checkout, my account shows the discount",
        "connect to HomeNet_5G, not HomeNet_2G, then log in again",
        "enter 192.168.0.1 in the browser to reach the router login",
        "my order ORD-88213 still shows processing and I can't log in to track it",
        "the new router is an RT-AX88U and the admin page is fine",
        "restore the server from backup_2024-03.tar.gz, then sign in",
        "Room 1204: the door lock is stuck again",
        "Phone: (323) 555-1234, the gate is open till six",
        "The admin account uses sha256 hashing and the vpn uses aes256gcm",
        "use python3.11 on the server and log in as deploy",
        "set it to 50mbps on the router admin page",
        "m2_alice, m2__alice = HKDF(nil, s_, nil) on the server",  # code
        "Log in with ways:First and user:Second",  # words run together
        "I changed it to dark mode and now I can't find the login button",
        "follow @mike_88 for the router firmware, he logs in to every model",
        "no me deja entrar a la app, ¿tiene que ver con que mi usuario sea carlos_r77?",
        "My card was declined twice at 1430 today, the amount was 2500",
        "The card ending in 4242 was declined and the gift card 6741 4382 1911 9019 too",
        "Customer record\nPhone: 07687 98875\nCard: 6011 9541 0499 0165",
        "Does a 12-character passphrase beat an 8-character random one?",
        "Was 9/11 Justified?ChatGPT: I can't log in to answer that",
    ],
)
def test_look_alikes_of_credentials_in_talk_about_getting_in_are_not_secrets(text: str) -> None:
    assert _secrets(text) == []


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        ("我的密码是Kq8#mLp2x，一直登录不了", ["Kq8#mLp2x"]),
        ("パスワードは「Tr0ub4dor&3」です。ログインできません", ["Tr0ub4dor&3"]),
        ("비밀번호는 monkey4043이에요. 근데 자꾸 틀렸대요", ["monkey4043"]),
        ("كلمة المرور هي Xy7#pQ2!k لكن الموقع يرفضها", ["Xy7#pQ2!k"]),
        ("银行卡密码 3851 会不会太好猜？", ["3851"]),
        ("نام کاربری reza_m و Kq8#mLp2x، لاگین نمی‌شه", ["Kq8#mLp2x"]),
        ("登入時輸入Monkey1990*一直跳出錯誤訊息", ["Monkey1990*"]),
    ],
)
def test_a_credential_in_another_script_is_found(text: str, secrets: list[str]) -> None:
    assert _secrets(text) == secrets


@pytest.mark.parametrize(
    "text",
    [
        "请输入密码以保护新的 PKCS#12 对象。",
        "无法同时指定 --ask-password 和 --password。",
        "密碼管理器推薦哪一款？1Password 還是 Bitwarden？",
        "社内Wiki用のアカウント、ID: tanaka_k です",
        "如果为 true，则到代理服务器的连接需要认证。用户名/密码由“/system/proxy/http/user”给出",
    ],
)
def test_talk_about_passwords_in_another_script_holds_no_secret(text: str) -> None:
    assert _secrets(text) == []


def test_an_assignment_and_a_sentence_about_the_same_value_report_it_once() -> None:
    text = "the new password is passwd=Tr0ub4dor&3"
    findings = find_pii(text, {FindingType.SECRET})
    assert [(text[f.start : f.end], f.confidence) for f in findings] == [("Tr0ub4dor&3", 0.8)]


def test_credentials_in_sentences_meet_their_measured_levels() -> None:
    """The ``test`` split of ``vsr-extproc eval pii``'s credentials in sentences, written by
    five writers the detector never saw. Measured with the learned reading of a value's
    surroundings: passwords 529/764, PINs 154/276, 9 of the 500 texts without one flagged;
    of the credentials no word names, the eleventh writer's 95/166 (42 by the rules alone),
    the tenth's 100/168 (58), the fifth's 95/178 (53), the fourth's 106/148 (84)."""
    from vsr_extproc.eval.credentials import evaluate_credentials

    report = evaluate_credentials("test")
    assert report["passwords"]["total"] == 764
    assert report["passwords"]["found"] >= 515
    assert report["pins"]["found"] >= 148
    assert report["unnamed_by_writer"]["11"]["found"] >= 88
    assert report["unnamed_by_writer"]["10"]["found"] >= 92
    assert report["unnamed_by_writer"]["5"]["found"] >= 88
    assert report["texts_without_a_credential"]["total"] == 500
    assert report["texts_without_a_credential"]["flagged"] <= 10
    assert report["other_findings_in_texts_with_one"] <= 22
