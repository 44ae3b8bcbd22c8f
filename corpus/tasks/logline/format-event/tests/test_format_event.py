import importlib
import os
import sys

import pytest


def loglib():
    sys.path.insert(0, os.getcwd())
    try:
        sys.modules.pop("loglib", None)
        return importlib.import_module("loglib")
    finally:
        sys.path.remove(os.getcwd())


def test_info_event_exact_line():
    line = loglib().format_event("cart-api", "cart.coupon.applied", "info", "Coupon applied",
                                 1718000000123, {"order_id": "o-17", "coupon": "SPRING"})
    assert line == ('{"at":1718000000123,"sev":"S4","svc":"cart-api","evt":"cart.coupon.applied",'
                    '"msg":"Coupon applied","ctx":{"coupon":"SPRING","order_id":"o-17"}}')


def test_empty_ctx_and_trailing_period():
    line = loglib().format_event("pay-gw", "payments.charge.captured", "info", "Charge captured.",
                                 1718000009999)
    assert line == ('{"at":1718000009999,"sev":"S4","svc":"pay-gw","evt":"payments.charge.captured",'
                    '"msg":"Charge captured","ctx":{}}')


@pytest.mark.parametrize("level,code", [("fatal", "S1"), ("error", "S2"), ("warning", "S3"),
                                        ("info", "S4"), ("debug", "S5")])
def test_level_codes(level, code):
    line = loglib().format_event("pay-gw", "payments.charge.refused", level, "Refused", 1, {"attempts": 2})
    assert line == ('{"at":1,"sev":"%s","svc":"pay-gw","evt":"payments.charge.refused",'
                    '"msg":"Refused","ctx":{"attempts":2}}' % code)


def test_mixed_ctx_values_sorted():
    line = loglib().format_event("batch-runner", "batch.job_run.finished", "debug", "Job done",
                                 1718000000000, {"rows": 12, "dry_run": False, "cursor": None, "job_id": "j-4"})
    assert line == ('{"at":1718000000000,"sev":"S5","svc":"batch-runner","evt":"batch.job_run.finished",'
                    '"msg":"Job done","ctx":{"cursor":null,"dry_run":false,"job_id":"j-4","rows":12}}')


@pytest.mark.parametrize("evt", ["Cart.coupon.applied", "cart.coupon", "cart.coupon.applied.twice",
                                 "cart-coupon-applied", "cart.coupon-code.applied", "cart..applied",
                                 "1cart.coupon.applied"])
def test_invalid_event_names_rejected(evt):
    with pytest.raises(ValueError):
        loglib().format_event("cart-api", evt, "info", "x", 1, {})


def test_valid_event_with_digits_and_underscores():
    line = loglib().format_event("cart-api", "cart.line_item2.removed", "info", "Removed", 5, {})
    assert '"evt":"cart.line_item2.removed"' in line
