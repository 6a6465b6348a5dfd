"""Passwords and PINs written in a sentence: "my password is Tr0ub4dor&3", "I reset the pw
to …", "enter … as the administrator password", "the door code is 4821".

``secrets`` finds a credential by its format or by the key it is assigned to
(``password = …``); people write theirs in sentences. A password here is a token of six
characters or more with letters and digits or symbols (or digits and symbols) that is no
date, time, version, amount, prefixed ID, address, link or path, no words joined
(``dois-je``, ``new_password``) and no code (brackets, ``=``). It counts when its sentence
names a password (``_PASSWORD_NOUN``, in nine languages), no user name stands nearer to
it, and either the sentence links the two ("is", ":", "to", "as", with at most five
words between: "the password I was given at onboarding was …") or the token is strong on
its own (eight characters or more of three kinds, and not a word with a short number such
as ``Windows10``). A PIN is four to eight digits after the words that name one ("PIN",
"passcode", "door code", "code for the gate") and "is", ":" or "to".

People also tell a credential without naming it: "log in with …", "it's jsmith / …",
"root:…", "I typed … and it says wrong", "the safe opens with …". Such a token counts, at
confidence 0.6, when the sentence or the words within ``_REACH`` of it are about getting
in (logging in, an account, a user's name, a failed attempt, or a device: a router, a
laptop; about twenty languages; letters and digits alone, ``e2fsck``, need words about
logging in or a default account before them, ``admin / …``),
the token stands where a credential goes (after "type", "use", "try", "set it to", "log in
with", after a user's name or an e-mail address and "/", "and", "then" or the script's own
joining word, joined to a default account as in ``root:…``, or before a verb that ends
its clause: "… eingeben", "… ile giriş yap"), and it is shaped like a
password: a small letter and a digit, or both cases and a symbol inside, and no user's
name (``jdoe_42``), compound (``laptop-949``), key and value (``width:5970``), file,
domain, hash, MAC address or model number (``RT-AX88U``), and no word before it naming it
as something else ("order", "code", "room", "called"). A strong token after "try", "typed"
or "set it to" counts without words about getting in. A PIN without its noun is four to
eight digits after "opens with", "press", "is" or a colon in a sentence about a lock, a
door, an alarm, a card or a phone.

In Japanese, Chinese, Korean, Cyrillic, Greek, Arabic, Hebrew, Hindi, Thai and Persian
text a password's or a PIN's name may be followed by a few of the script's characters
(particles, articles: パスワードは…, 密码是…) and then the value (``_in_other_scripts``).

Where these rules find nothing, ``credential_context`` reads a candidate's surroundings
with learned weights (``find_pii`` runs both).

Measured by ``vsr-extproc eval pii`` on messages written for this project (``dev`` and
``test`` by different writers; later rows, each with its ``writer``, by eight more).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from vsr_extproc.detectors.findings import Finding, FindingType, resolve_overlaps
from vsr_extproc.detectors.secrets import is_placeholder

_PASSWORD_WORDS = (
    r"pass(?:word|phrase|wort|code)s?|pw|pwd|passwd|kennwort|mot de passe|mdp|contraseña|"
    r"clave|senha|palavra-passe|wachtwoord|hasło|haslo|şifre|parola|wi-?fi (?:key|code)|"
    r"wlan-?schlüssel|credentials?|lösenord|adgangskode|passord|salasana|heslo|parolă|jelszó|"
    r"пароль|пароля|паролем|κωδικός|κωδικό|kata sandi|sandi|mật khẩu"
)
_PIN_WORDS = (
    r"pin|pin-?code|code pin|geheimzahl|passcode|toegangscode|türcode|zugangscode|"
    r"code d'accès|(?:door|gate|alarm|garage|access|unlock|entry|lock|safe|voicemail|sim|"
    r"tablet|phone|security|keypad|key pad|building|house|locker)[ -]?code|"
    r"code (?:for|to|of) (?:the |my |your )?(?:door|gate|alarm|garage|safe|locker|phone|"
    r"tablet|unlock|building|house)\w*"
)
_PASSWORD_NOUN = re.compile(rf"(?i:\b(?:{_PASSWORD_WORDS})\b)")
_PIN_NOUN = re.compile(rf"(?i:\b(?:{_PIN_WORDS})\b)")


class _Scan:
    """A pattern written in lower case, found in the lower-cased text where lower-casing
    keeps every position (without ``(?i)``, which costs ``re`` about three times as much
    over a page), else in the text itself with ``re.IGNORECASE`` ("İ" lower-cases to two)."""

    def __init__(self, pattern: str) -> None:
        self.lower = re.compile(pattern)
        self.any_case = re.compile(pattern, re.IGNORECASE)

    def finditer(self, text: str, lowered: str) -> Iterator[re.Match[str]]:
        if len(lowered) == len(text):
            return self.lower.finditer(lowered)
        return self.any_case.finditer(text)


# either noun, to find the sentences worth reading
_NOUNS = _Scan(rf"\b(?:{_PASSWORD_WORDS}|{_PIN_WORDS})\b")
# a user name's nouns: a token nearer to one of them is the user's name, not a password
_USER_NOUN = re.compile(
    r"(?i:\b(?:user(?:name| name| id)?|login(?: name)?|account name|e-?mail|benutzer(?:name)?|"
    r"nom d'utilisateur|identifiant|usuario|usuário|utilizador|gebruikersnaam|nome utente|"
    r"användarnamn|användare|brugernavn|brukernavn|käyttäjätunnus|uživatel|utilizator|"
    r"felhasználónév|логин|пользователь|користувач|χρήστης|pengguna)\b)"
)
_TOKEN = re.compile(r"[\"'`“‘«„‚‹»]?([^\s\"'`“”’»«„‚‹›]{4,64})[\"'`“”’»«‹›]?")
_SENTENCE = re.compile(r"[^\n]+?(?:[.!?](?=\s)|(?=\n)|$)")
_WORDS = re.compile(r"\S+")
WINDOW = 8  # words between a password noun and its value, either side
_NOT_A_SECRET = re.compile(
    r"[\d./:-]+|[A-Z]{1,5}-[\d-]+|v?\d+(?:\.\d+)+\w*|[\w.+-]+@[\w-]+\.[\w.]+|\w+://\S+|#?\d+|"
    r"\d+(?:st|nd|rd|th|h|am|pm|min|mins|s|ms|gb|mb|kb|x)"
)
_JOINED_WORDS = re.compile(r"[^\W\d_]+(?:[-'’_./][^\W\d_]+)+")  # dois-je, etc/group
# brackets, printf's "%08x", an escaped newline "%0A", troff's "\fB", "\&", "\-"
_CODE = re.compile(r"[()\[\]{}<>=|]|%(?:%?0A|\d*l?[sdiuxXf])|\\[&fFe(*-]")
_TERM_COMPOUND = re.compile(r"\S*\d\S*-[^\W\d_]{4,}")
LATIN_RUN = re.compile(r"[!-~]{4,64}")
WRITTEN_WITHOUT_SPACES = re.compile(r"[\u0e00-\u0e7f\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]")
_COUNTED = re.compile(r"\d+(?:-[^\W\d_]+)+")  # "a 12-character passphrase", "8-digit"
# between a password noun and its value: up to five words, then "is", ":" or "to", then at
# most two ("is now", "ist jetzt"); or the value straight after the noun ("my old password …")
_LINKED_AFTER = re.compile(
    r"(?:(?:\s+[^\s:=]+){0,5}?"
    r"(?:\s*(?:->|→|=>|[:=–—-])|'s|\s+(?:is|was|are|be|becomes|ist|lautet|war|est|c'est|es|era|é|è|naar|"
    r"to|auf|à|a|para|op|als|as))(?:\s+\w+){0,2}?)?\s*[\"'`“‘«]?\Z",
    re.IGNORECASE,
)
# ... or before the noun: "enter … as the administrator password"
_LINKED_BEFORE = re.compile(
    r"[\"'`”’»]?\s+(?:as|is|als|comme|como|come)\s+(?:\w+\s+){0,3}?\Z", re.IGNORECASE
)
_PIN_VALUE = re.compile(
    r"(?:\s+(?:\S+\s+){0,6}?(?:is|ist|est|es|é|è|lautet|to|auf|op|naar|para|a|à|as|als)"
    r"|(?:\s+[^\W\d]+){0,2}?\s*(?:->|→|=>|[:=–—-])|\s*)\s*[\"'`]?(\d{4,8})\b(?![.,/:-]\d)",
    re.IGNORECASE,
)
WORD_AND_NUMBER = re.compile(r"[A-Za-z]+\d{1,3}")  # Windows10, iPhone15, Python3


def _secret_like(token: str) -> bool:
    if len(token) < 6 or is_placeholder(token) or _NOT_A_SECRET.fullmatch(token):
        return False
    if WRITTEN_WITHOUT_SPACES.search(token):
        return False  # "社内Wiki用のアカウント、ID:": words of a script without spaces
    bare = token.rstrip("?!")  # "fürs Online-Banking?"
    if _JOINED_WORDS.fullmatch(bare) or _CODE.search(token) or _COUNTED.fullmatch(bare):
        return False
    if _TERM_COMPOUND.fullmatch(bare):
        return False  # "SOCKSv5-protokollen", "MD5-Verschlüsselung"
    letters = any(char.isalpha() for char in token)
    digits = any(char.isdigit() for char in token)
    symbols = any(not char.isalnum() for char in token)
    return (letters and (digits or symbols)) or (digits and symbols)


def strong(token: str) -> bool:
    """A token that reads as a password without a sentence saying so."""
    kinds = sum((
        any(char.islower() for char in token), any(char.isupper() for char in token),
        any(char.isdigit() for char in token), any(not char.isalnum() for char in token),
    ))  # fmt: skip
    return len(token) >= 8 and kinds >= 3 and not WORD_AND_NUMBER.fullmatch(token)


def _passwords(sentence: str, at: int) -> Iterator[Finding]:
    nouns = list(_PASSWORD_NOUN.finditer(sentence))
    if not nouns:
        return
    starts = [word.start() for word in _WORDS.finditer(sentence)]

    def word_of(position: int) -> int:
        return sum(start <= position for start in starts) - 1

    owners = [(word_of(noun.start()), True) for noun in nouns]
    owners += [(word_of(noun.start()), False) for noun in _USER_NOUN.finditer(sentence)]
    for start, token in _tokens(sentence):
        end = start + len(token)
        if token.rstrip("!?").isalpha() or not _secret_like(token):
            continue  # a word and its question mark
        if _PASSWORD_NOUN.fullmatch(token):
            continue
        word = word_of(start)
        before = [owner for owner in owners if word - WINDOW <= owner[0] < word]
        after = [owner for owner in owners if word < owner[0] <= word + WINDOW]
        # the noun the token belongs to: the nearest before it, else the nearest after
        if not (max(before)[1] if before else min(after)[1] if after else False):
            continue
        linked = any(
            (noun.end() <= start and _LINKED_AFTER.match(sentence, noun.end(), start))
            or (noun.start() >= end and _LINKED_BEFORE.match(sentence, end, noun.start()))
            for noun in nouns
        )
        if linked or strong(token):
            yield Finding(FindingType.SECRET, at + start, at + end, 0.7, "password")


def _tokens(sentence: str) -> Iterator[tuple[int, str]]:
    """Each token of a sentence and where it starts, without the sentence's punctuation."""
    for match in _TOKEN.finditer(sentence):
        # a comma or a sentence's full stop after it is the sentence's; "!" and "?" may be
        # the password's own, and staying in the span they are redacted with it
        token = match.group(1).rstrip(",;:)،؛。，、").lstrip("¿¡(")
        if token.endswith(".") and match.end(1) >= len(sentence.rstrip()):
            token = token.rstrip(".")
        start = match.start(1) + match.group(1).index(token) if token else match.start(1)
        if WRITTEN_WITHOUT_SPACES.search(token):
            # "用的是Tr0ub4dor&3，刚才": the Latin runs between the script's words
            for run in LATIN_RUN.finditer(token):
                yield start + run.start(), run.group().rstrip(",;:.)")
            continue
        yield start, token


# A password's or a PIN's name in a script written without spaces between words, or whose
# particles and articles join the word (パスワードは…, 密码是…, 비밀번호는 …, كلمة المرور هي …),
# then at most a few characters of that script, then the value in Latin letters and digits
_SCRIPT_NOUN = (
    r"パスワード|パスコード|暗証番号|ロック解除|密码|密碼|口令|解锁码|解鎖碼|锁屏|鎖屏|"
    r"비밀번호|비번|패스워드|암호|핀번호|ПИН-код|ПІН-код|пин-код|пароль|пасс|κωδικ[όο]ς?|"
    r"συνθηματικό|كلمة المرور|كلمة السر|الرقم السري|الباسورد|باسورد|رمز المرور|סיסמה|סיסמא|"
    r"पासवर्ड|पिन|รหัสผ่าน|รหัส|رمز عبور|گذرواژه|پسورد"
)
_IN_OTHER_SCRIPTS = re.compile(
    rf"(?i:(?P<noun>{_SCRIPT_NOUN})|\b(?P<latin>pw|pwd|pin|password|pass(?:code)?|wifi)\b)"
    r"(?P<gap>[^!-~。？！]{0,12}?)[:=\"'(\[]?(?P<value>[!-~]{4,64})(?![!-~]|\s*[年년月월日일])"
)
_OTHER_SCRIPT = re.compile(r"[^\x00-\u024f]")  # beyond Latin: CJK, Hangul, Cyrillic …


def _in_other_scripts(text: str) -> Iterator[Finding]:
    """A password or a PIN named in another script, its value in Latin letters or digits."""
    for match in _IN_OTHER_SCRIPTS.finditer(text):
        if match["latin"] and not _OTHER_SCRIPT.search(match["gap"]):
            continue  # "password 2024": English, read by the sentence rule
        value = match["value"].rstrip(".,;:)]\"'")
        start = match.start("value")
        if value.isdigit() and 4 <= len(value) <= 8 and not _YEAR.fullmatch(value):
            yield Finding(FindingType.SECRET, start, start + len(value), 0.7, "pin")
        elif _secret_like(value) and not _names_something(value):
            yield Finding(FindingType.SECRET, start, start + len(value), 0.7, "password")


def _names_something(value: str) -> bool:
    """A value that names something, not a secret: an option (``--password``), a path, a
    link, a version, a name in capitals (``PKCS#12``)."""
    return bool(
        value[0] in "-/" or "/" in value or not any(char.islower() for char in value)
        or _NOT_A_SECRET.fullmatch(value) or _IDENTIFIER.fullmatch(value.rstrip("!?"))
    )  # fmt: skip


def _pins(sentence: str, at: int) -> Iterator[Finding]:
    for noun in _PIN_NOUN.finditer(sentence):
        value = _PIN_VALUE.match(sentence, noun.end())
        if value is not None:
            yield Finding(FindingType.SECRET, at + value.start(1), at + value.end(1), 0.7, "pin")


# --- credentials that no word names ------------------------------------------------------
# "log in with …", "it's jsmith / …", "the safe opens with …": a credential is told by where
# it stands. Such a token counts only where the words around it are about getting in
# (``_LOGIN_WORDS``, ``_DEVICE_WORDS``), it stands where a credential goes (``_SLOT``,
# ``_SLOT_AFTER``, ``_PAIR``, ``_USER_TOLD``), and it is shaped like a password, not like a
# name for something (``password_shaped``). Without words about getting in, a strong token
# (``strong``) after "try", "typed" or "set it to" counts too (``_STRONG_AFTER``).

# the things one gets into: they make a sentence about getting in, but technical text is
# full of them, so a token of letters and digits alone needs a word about logging in
_DEVICE_WORDS = (
    r"admin\w*|root|sudo|wi-?fi|wlan|hotspot|router|modem|portal|vpn|ssh|access|"
    r"(?:guest|wireless|home|office) ?net(?:work)?|laptop|ipad|tablet|computer|pc|desktop|"
    r"terminal|console|server|nas|database|netflix|spotify|amazon|streaming|users?"
)
_LOGIN_WORDS = (
    r"log(?:s|ged|ging)?[ -]?(?:in|on)(?:to)?|logins?|logon|sign(?:s|ed|ing)?[ -]?in(?:to)?|"
    r"signin|lock(?:s|ed)?(?: me| us| you| him| her)? out|lock(?:ed|screen)|"
    r"get(?:ting)? in(?:to)?|got in(?:to)?|let (?:me|you|us|them) in|i'?m in|"
    r"accounts?|unlock\w*|prompts?|"
    # what a failed attempt is answered with
    r"wrong|incorrect|invalid|rejected|rejects|denied|falsch\w*|incorrect[oa]|errad[oa]|fout|"
    r"błędn\w*|hatalı|sbagliat\w*|"
    r"anmeld\w*|einlogg\w*|eingeloggt|konto|zugang\w*|entsperr\w*|"
    r"connecte\w*|connexion|compte|accès|accéder|déverrouill\w*|"
    r"iniciar sesión|entra\w*|cuenta|acceso|acceder|desbloque\w*|"
    r"conta|acesso|logar|"
    r"inlog\w*|aanmeld\w*|toegang|ontgrendel\w*|"
    r"accedere|accedi|accesso|sblocc\w*|"
    r"zaloguj\w*|logowa\w*|odblok\w*|"
    r"giriş|hesab\w*|gir|meld\w* dich|"
    r"user ?name|user id|benutzer(?:name)?|nom d'utilisateur|identifiant|utilisateur|"
    r"usuario|utilizador|utente|gebruikersnaam|gebruiker|użytkownik\w*|kullanıcı\w*|"
    # sv, da, no, fi, cs, ro, hu, ru, uk, el, id, vi
    r"logga in|inloggning|log ind|logge? inn|innlogging|användare|bruger\w*|bruker\w*|låst|"
    r"kirjau\w*|tili\w*|käyttäjä\w*|přihl\w*|účt?\w*|uživatel\w*|autentific\w*|cont|"
    r"utilizator\w*|bejelentkez\w*|fiók\w*|felhasználó\w*|войти|вход\w*|логин\w*|"
    r"аккаунт\w*|учётн\w*|учетн\w*|пользовател\w*|зайти|увійти|вхід|логін\w*|акаунт\w*|"
    r"обліков\w*|користувач\w*|σύνδεσ\w*|συνδεθ\w*|λογαριασμ\w*|χρήστη\w*|masuk|akun|"
    r"pengguna|đăng nhập|tài khoản|"
    # talk about a password's worth: "how strong is …", "I reused … everywhere"
    r"strong|weak|secure|guess\w*|hack\w*|breach\w*|leak\w*|reus\w*|pwned|"
    r"segur[ao]|sicher|sûr|forte"
)
# words about getting in that compound into longer words: "Kundenportal", "klantportaal"
_LOGIN_STEMS = (
    r"konto|account|zugang|login|loggen|logga|"
    # written without spaces, or with words that join their articles and particles
    r"ログイン|アカウント|登录|登入|登錄|账号|帳號|帐号|账户|帳戶|用户名|使用者|로그인|계정|아이디|"
    r"잠금|잠겨|الحساب|حساب|اسم المستخدم|الإيميل|החשבון|חשבון|שם משתמש|ננעל|अकाउंट|यूज़रनेम|"
    r"लॉगिन|लॉक|บัญชี|ยูสเซอร์|ล็อกอิน|ล็อก|نام کاربری|لاگین|قفل"
)
_DEVICE_STEMS = r"portal|portaal|router|wlan|wifi"
_LOCK_WORDS = (
    r"safe|doors?|gates?|alarm|locks?|lockbox|locker|padlock|keypad|key ?safe|garage|"
    r"storage unit|panel|tresor|tür|alarmanlage|schloss|porte|cadenas|coffre|clavier|"
    r"puerta|candado|caja fuerte|alarma|cofre|portão|cadeado|alarme|deur|kluis|slot|"
    r"cassaforte|lucchetto|cancello|allarme|sejf\w*|drzwi|kłódk\w*|kapı\w*|kilit|"
    r"tuş takımı\w*|phone|card|carte|tarjeta|cartão|karte|ipad|tablet|disarm|arm|atm|cajero|"
    r"bankomat\w*|geldautomat\w*|distributeur|caixa eletrônico|multibanco|pinautomaat|bankpas|"
    r"telefon\w*|teléfono|telefone|handy|smartphone|móvil|celular|telefoon|kort|kortet|"
    r"carta|bancomat|kartu|karta|kartę|kartą"
)
_REACH = 120  # characters either side of a sentence where words about getting in count
_ACCESS = _Scan(
    rf"(?P<login>\b(?:{_LOGIN_WORDS})\b|{_LOGIN_STEMS})|\b(?:{_DEVICE_WORDS})\b|{_DEVICE_STEMS}"
)
_LOCK = _Scan(rf"\b(?:{_LOCK_WORDS})\b")
_DIGIT_RUN = re.compile(r"\d{4}")
# where a credential goes, just before it (the words may be the sentence's first)
_SLOT = re.compile(
    r"(?:^|\s)(?:(?:just|then|simply|pls|please|now|and|to|you)\s+)?(?:"
    r"use[sd]?|using|type[sd]?|typing|enter(?:ed|ing|s)?|try|tried|trying|paste|"
    r"put in|punch in|key in|input|"
    r"(?:set|changed?|reset|switched|updated?|been reset)(?: \w+)?(?: to| as| into)|"
    r"(?:in|on|open(?:s|ed)?|unlocks?|unlocked|get in|connect(?:ed)?|sudo|use)(?: \S+){0,3}? with|"
    r"it'?s(?: still| now)?|is(?: still| now)?|(?:is|was) it(?: still| now)?|es|ist|est|é|è|"
    r"mit|avec|con|com|met|ile|tipp|tippe|tape[sz]?|tapé|entre[sz]?|escrib\w*|puse|pon|"
    r"introduce|digit[ae]|inserisci|metti|typ|wpisz|wpisując|wpisałam|wpisałem|"
    r"tenta|prueba|essaie|versuch's|probier's|"
    r"auf|para|naar|a|en|na|"
    r"пробовал\w*|пробував\w*|вводжу|ввожу|ввёл|ввела|δοκίμασα|πατάς|ξεκλειδώνει με|"
    r"открывается на|разблокируется на|через"
    r")\s*[\"'`“‘«]?\Z|"
    # in scripts whose verbs join the value: 输入…, 用的是…, ใส่…, جربت …
    r"(?:输入|輸入|入力|用的是|用|试试|試試|입력|جربت|أدخل|ادخل|ניסיתי|מקישים|נפתח עם|डाला|"
    r"ใส่|ลองใส่|ด้วย|زدم|با)\s*[\"'`“‘«「]?\Z",
    re.IGNORECASE,
)
# ... or just after it, where a verb follows its object (German, Dutch, Turkish, Japanese)
_SLOT_AFTER = re.compile(
    r"[\"'`”’»]?\s*(?:eingeben|eintippen|eingetippt|eingegeben|geändert|gesetzt|ingetikt|intypen|"
    r"invoeren|ingevoerd|ingevuld|veranderd|gewijzigd|ile|yazdım|yaz|yazın|gir|girin|girdim|"
    r"is what i use|is the one|[—–-]+ that['’]s (?:the one|it))\b|を入力|と入力|でログイン|に変更",
    re.IGNORECASE,
)
# a user's name and what joins the secret to it: "jsmith / …", "admin, then …", "email + …"
_PAIR = re.compile(
    r"(?:^|\s)[\"'`“‘«]?[\w.@+-]{2,64}[\"'`”’»]?"
    r"\s*(?:/|\||\+|,? then|,? and|,? y|,? e|,? und|,? et|,? en|,? i|,? ve|,? danach|,? puis|"
    r",? luego|,? depois|,? daarna|,? poi|,? a dalej|,? a potem|,? sonra)\s*[\"'`“‘«]?\Z",
    re.IGNORECASE,
)
# ... in any script: "ahmed_ali و…", "rahul_sharma और …", "somchai_k กับ …", "chen.mei 、…"
_SCRIPT_PAIR = re.compile(r"[a-z][\w.+-]*[._@\d][\w.@+-]*\s*[^!-~\s]{1,4}[\s-]*\Z")
# a word that names the token as something else: "order ORD-1", "code SAVE20", "user bob"
_NAMED_OTHERWISE = re.compile(
    r"(?i:\b(?:order|ticket|case|invoice|booking|reservation|reference|ref|tracking|"
    r"confirmation|model|serial|sku|part|product|item|id|number|no|nr|num|code|coupon|"
    r"voucher|promo|discount|extension|ext|room|flight|seat|plate|version|build|branch|"
    r"commit|tag|handle|ssid|port|host|hostname|server|file|folder|called|named|as|"
    r"amount|total|price|balance|limit|fee|betrag|importe|montant|saldo|valor|"
    r"ending in|ends in|ending with|at|around|rfc|cve|bug|issue|patch|pr|floor|page|line|"
    r"unit|apt|apartment|suite|building|bus|train|route|platform|year|since|until|till|"
    r"before|after|from)"
    r"(?:\s+(?:is|es|ist|est|é|è|was))?\W{0,3}\Z)"
)
# a user's name just before the token: "username jdoe_42", "login: admin", "user is bob"
_USER_BEFORE = re.compile(
    _USER_NOUN.pattern + r"(?:\s*[:=]|\s+(?:is|was|es|ist|est|é|è))?\s*[\"'`“‘«]?\Z"
)
# a user's name told before it in the sentence: an e-mail address, "Usuario: lgarcia, y …"
_USER_TOLD = re.compile(
    r"[\w.+-]+@[\w-]+\.[\w.]+|"
    + _USER_NOUN.pattern
    + r"(?:\s*[:=]\s*[\"'`“‘«]?[\w.@+-]{2,64}|(?:\s+(?:is|was|es|ist|est|é|è|wa))?\s*"
    r"[\"'`“‘«]?[\w+-]*[\d._@][\w.@+-]*)[\"'`”’»]?[,;\s]"
)
# an account every device has, just before the token: "admin / …", "root:…"
_DEFAULT_ACCOUNT = re.compile(
    r"(?i:\b(?:admin|administrator|root|guest|user|pi|ubnt|operator|support|editor|manager)"
    r"\s*(?:[/:]\s*)?\Z)"
)
_NOT_IN_A_USERS_NAME = re.compile(r"[^\w.@-]")
USER_AND_SECRET = re.compile(r"([a-z][\w.-]{1,30})([:/])(\S+)")
# a small letter and a digit, or both cases and a symbol inside: "monkey4043", "kO$kg#Wrdi"
_PASSWORD_MIX = re.compile(
    r"(?=.*\d)(?=.*[a-zß-ÿ])|(?=.*[a-z])(?=.*[A-Z])(?=.*[a-zA-Z][!#$%&*+=?@^][a-zA-Z])"
)
_PASSWORD_SYMBOLS = frozenset("!#$%&*+-.=?@^_")
_COMPOUND = re.compile(r"[^\W_]*_\w*|(?:[^\W\d_]+|\d+)(?:[-_.](?:[^\W\d_]+|\d+))+")
# a word of four letters or more, or one written in digits ("f4lc0n", "m0nk3y")
_WORDLIKE = re.compile(r"[a-zß-ÿ]{4}|[a-z][013457][a-z]")
_RUN_TOGETHER = re.compile(r"[^\W\d_]+[?!,;:][^\W\d_]+")  # "Justified?ChatGPT"
_HANDLE = re.compile(r"[@#]\w+")
_USERNAME = re.compile(r"[a-z]+(?:[._][a-z0-9]+)+|[a-z]+\d{1,2}|\d+[a-z]{1,2}")
_IDENTIFIER = re.compile(
    r"[a-z0-9]+(?:-[a-z0-9]+)+|\d+x\d+|"  # mpt-7b-instruct, 800x450
    # versions: python3.11, TLSv1.2, libgdk-pixbuf-2.0-dev, v1beta1
    r"(?i:[a-z]*\d+(?:\.\d+)+[\w+-]*|[\w+-]*-\d+(?:\.\d+)+[\w+-]*|v\d+[a-z]\w*)|"
    r".*\w\.[A-Za-z]\w.*|"  # COPYING.GPLv2, aes-test.m4, dns.V4MAPPED
    r"\d+(?:[kmgt]?bps|[kmgt]?i?b|[kmg]?hz|fps|px|p\d*|k\d*|mah|[mck]m|kg|ms)|"  # 50mbps, 4k60
    # hashes, UUIDs, MAC addresses, files and domains, a word and a short number
    r"(?i:(?:0x)?[0-9a-f]{6,}|[0-9a-f-]{16,}|[0-9a-f]{1,2}(?:[:-][0-9a-f]{1,2}){2,}|"
    r"[\w-]+(?:\.[\w-]+)*\.[a-z]{1,4}|[A-Za-z]+\d{1,2})"
)
_STRONG_AFTER = _Scan(
    r"\b(?:try|tried|trying|typed?|entered|(?:set|changed|reset) (?:it|that|this|mine|them) to|"
    r"tapé|tape[sz]?|tipp(?:e|te)?|escrib\w*|puse|pon|digit\w*|coloquei|wpisa\w*|yazdım|"
    r"prob(?:eer|ier\w*|é|ar)|prova|essa(?:ie|yé)|versuch\w*|prueba|intent[aé]|tent(?:a|ei))\s+"
    r"[\"'`“‘«]?([^\s\"'`”’»]{8,64})"
)
_PIN_SLOT = re.compile(
    r"(?:\b(?:(?:open|unlock|disarm|öffn|ouvr|abr|apr|ontgrendel|odblok)\w*(?: \S+){0,2}? "
    r"(?:with|mit|avec|con|com|met|z)|(?:schalte|zet)\w*(?: \S+){0,2}? (?:mit|met)|"
    r"press|enter|type|punch in|key in|put in|takes|is|'s|é|es|ist|est|è|tape[sz]?|wpisz)|"
    r"\b(?:safe|doors?|gates?|alarm|lock|lockbox|locker|padlock|keypad|garage|tresor|"
    r"alarmanlage|cadenas|coffre|candado|alarma|cofre|cadeado|kluis|lucchetto|sejf)\s*[:—–-])"
    r"\s*[\"'`]?(\d{4,8})\b(?![.,/:-]\d)(?!\s\d)",
    re.IGNORECASE,
)


# a sentence about a lock or a card that tells of a failed attempt or a new setting
_FAILED_OR_SET = re.compile(
    r"(?i:\b(?:wrong|incorrect|invalid|rejected|declined|won'?t (?:open|accept|take)|"
    r"(?:set|changed?|reset) (?:it|that|this|mine|my \w+|the \w+) (?:to|as)|"
    r"falsch\w*|incorrect[oa]|errad[oa]|fout|sbagliat\w*|błędn\w*|hatalı|salah|"
    r"geändert|cambiat[oa]|cambié|mudei|veranderd|gewijzigd|zmieni\w*|"
    r"(?:no |niet |nicht |pas |não )?(?:accept\w*|akzeptier\w*|acepta\w*|accett\w*|aceit\w*))\b)"
)
_STANDALONE_NUMBER = re.compile(
    r"(?<![\w.,:/+#$€£¥-])(?<![\d.,:/+#$€£¥-]\s)\d{4,8}(?![\w]|[.,:/-]\d|\s\d)"
    r"(?!\s*(?:%|€|\$|£|¥|eur|usd|gbp|kr|zł|yen|dollars?|euros?|pounds?|min|minutes?|"
    r"seconds?|hours?|days?|times|x\b|mal\b|veces|fois))",
    re.IGNORECASE,
)
_YEAR = re.compile(r"19\d\d|20\d\d")


def password_shaped(token: str) -> bool:
    """A token that may be a password when no word names it: small letters and digits, maybe
    symbols, and no user's name, compound ("30-year-old", "laptop-949"), key and value
    ("width:5970"), file, domain, hash, MAC address or model number."""
    if len(token) < 6 or not _PASSWORD_MIX.match(token) or not _secret_like(token):
        return False
    if token[0] == "-" or not all(char.isalnum() or char in _PASSWORD_SYMBOLS for char in token):
        return False  # "marks:“You", "Speaker🧿", "entirety，", "nsfw,harmful", paths
    if token.isalnum() and token.islower() and not _WORDLIKE.search(token):
        return False  # small letters and digits that read as no word: sha256, utf8mb4, es2015
    bare = token.rstrip("?!.")  # "is it carlos_r77?"
    return not (
        _HANDLE.fullmatch(bare)
        or _USERNAME.fullmatch(bare)
        or _IDENTIFIER.fullmatch(bare)
        or _COMPOUND.fullmatch(bare)
        or _RUN_TOGETHER.fullmatch(bare)
    )


def _unnamed_passwords(text: str, found: re.Match[str], login: bool) -> Iterator[Finding]:
    """Tokens of a sentence about getting in that stand where a credential goes; small
    letters and digits alone (``rtl8xxxu``, ``e2fsck``) only near words about logging in."""
    at, sentence = found.start(), found.group()
    for start, token in _tokens(sentence):
        if not token:
            continue
        joined = USER_AND_SECRET.fullmatch(token)
        if joined and joined.group(2) == "/" and not _DEFAULT_ACCOUNT.search(joined.group(1)):
            joined = None  # "gnutls/gnutls#1107", "arm/curve25519": a path, not "admin/…"
        if joined and password_shaped(joined.group(3)):
            start, token = start + joined.start(3), joined.group(3)  # root:Tr0ub4dor
        else:
            joined = None
            if not password_shaped(token):
                continue
        if _PASSWORD_NOUN.fullmatch(token):
            continue
        before = sentence[max(0, start - 60) : start]
        if not login and token.isalnum():
            user = joined.group(1) if joined else before
            if not _DEFAULT_ACCOUNT.search(user):
                continue  # "wifi: rtl8xxxu", "resize2fs and e2fsck"; not "admin / monkey654"
        if _NAMED_OTHERWISE.search(before):
            continue
        if _USER_BEFORE.search(before) and not _NOT_IN_A_USERS_NAME.search(token.rstrip("?!.")):
            continue  # "username jdoe42", "login: admin"
        # the text, not the sentence: a sentence ends at a password's own "!"
        slot = _SLOT.search(before) or _SLOT_AFTER.match(text, at + start + len(token))
        pair = any(rule.search(before) for rule in (_PAIR, _USER_TOLD, _SCRIPT_PAIR))
        if slot or pair or joined:
            yield Finding(FindingType.SECRET, at + start, at + start + len(token), 0.6, "password")


def _unnamed_pins(sentence: str, at: int) -> Iterator[Finding]:
    if _FAILED_OR_SET.search(sentence):  # "the ATM says 4687 is wrong", "I set the safe to …"
        for value in _STANDALONE_NUMBER.finditer(sentence):
            if not (
                _NAMED_OTHERWISE.search(sentence, max(0, value.start() - 40), value.start())
                or _YEAR.fullmatch(value.group())
            ):
                yield Finding(FindingType.SECRET, at + value.start(), at + value.end(), 0.6, "pin")
        return
    for value in _PIN_SLOT.finditer(sentence):
        if _NAMED_OTHERWISE.search(sentence, max(0, value.start() - 40), value.start(1)):
            continue  # "room 1204", "phone number is 5551234"
        yield Finding(FindingType.SECRET, at + value.start(1), at + value.end(1), 0.6, "pin")


def _strong_after_a_verb(text: str, lowered: str) -> Iterator[Finding]:
    for match in _STRONG_AFTER.finditer(text, lowered):
        start = match.start(1)
        token = text[start : match.end(1)].rstrip(",;:.)")
        if strong(token) and password_shaped(token):
            yield Finding(FindingType.SECRET, start, start + len(token), 0.6, "password")


def find_prose_secrets(text: str) -> list[Finding]:
    """Passwords and PINs that sentences of ``text`` name as such, or tell by where they
    stand among words about getting in, by start. Only the sentences that hold a password's
    or a PIN's noun, or stand near words about getting in or a lock, are read."""
    lowered = text.lower()
    nouns = [match.start() for match in _NOUNS.finditer(text, lowered)]
    cues = list(_ACCESS.finditer(text, lowered))
    access = [cue.start() for cue in cues]
    logins = [cue.start() for cue in cues if cue.lastgroup == "login"]
    # a PIN no word names is four digits or more
    locks = (
        [lock.start() for lock in _LOCK.finditer(text, lowered)] if _DIGIT_RUN.search(text) else []
    )
    findings: list[Finding] = list(_strong_after_a_verb(text, lowered))
    if _OTHER_SCRIPT.search(text):
        findings += _in_other_scripts(text)
    for region_start, region_end in _regions(text, sorted([*nouns, *access, *locks])):
        for sentence in _SENTENCE.finditer(text, region_start, region_end):
            start, end = sentence.start(), sentence.end()
            named = _between(nouns, start, end)
            if named:
                findings += [
                    *_passwords(sentence.group(), start),
                    *_pins(sentence.group(), start),
                ]
            if named or _between(access, start - _REACH, end + _REACH):
                login = named or _between(logins, start - _REACH, end + _REACH)
                findings += _unnamed_passwords(text, sentence, login)
            if _between(locks, start, end):
                findings += _unnamed_pins(sentence.group(), start)
    return resolve_overlaps(findings)


def _regions(text: str, anchors: list[int]) -> Iterator[tuple[int, int]]:
    """The lines within ``_REACH`` of an anchor, merged: the only text worth reading."""
    start = end = -1
    for anchor in anchors:
        if end >= 0 and anchor - _REACH <= end:
            end = max(end, _line_end(text, anchor + _REACH))
            continue
        if end >= 0:
            yield start, end
        start = text.rfind("\n", 0, max(0, anchor - _REACH)) + 1
        end = _line_end(text, anchor + _REACH)
    if end >= 0:
        yield start, end


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", min(at, len(text)))
    return len(text) if end < 0 else end


def _between(starts: list[int], start: int, end: int) -> bool:
    at = bisect.bisect_left(starts, start)
    return at < len(starts) and starts[at] < end
