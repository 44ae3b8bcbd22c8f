import json
from pathlib import Path

EXPECTED = [
    '{"at":1718900000000,"sev":"S4","svc":"signup-api","evt":"signup.account.created","msg":"Account created",'
    '"ctx":{"email":"<pii:email>","plan":"pro","user_id":"u-1"}}',
    '{"at":1718900000450,"sev":"S3","svc":"signup-api","evt":"signup.sms.deferred","msg":"SMS provider busy",'
    '"ctx":{"contact_phone":"<pii:contact_phone>","ip":"<pii:ip>","retry_in_ms":5000}}',
    '{"at":1718900001200,"sev":"S2","svc":"signup-api","evt":"signup.card.declined","msg":"Card declined",'
    '"ctx":{"attempts":2,"billing_email":"<pii:billing_email>","card_number":"<pii:card_number>","phone_verified":true}}',
]


def lines():
    path = Path("events.redacted.jsonl")
    assert path.is_file(), "events.redacted.jsonl is missing"
    return [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def test_three_json_lines():
    got = lines()
    assert len(got) == 3
    for ln in got:
        json.loads(ln)


def test_no_personal_data_left():
    body = "\n".join(lines())
    for secret in ("dana@example.com", "+15550100", "203.0.113.7", "4111111111111111", "ops@example.com"):
        assert secret not in body


def test_redaction_values():
    got = [json.loads(ln)["ctx"] for ln in lines()]
    want = [json.loads(ln)["ctx"] for ln in EXPECTED]
    assert got == want


def test_exact_lines():
    assert lines() == EXPECTED


def test_input_untouched():
    assert "dana@example.com" in Path("events.jsonl").read_text(encoding="utf-8")
