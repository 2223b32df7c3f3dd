"""A labelled evaluation set for relevance selection.

An agent's session across six domains: tool calls with realistic names,
arguments and outputs, and questions a user would ask at answer time, each with
the calls that answer it. Questions are phrased the way people ask, not in the
words of the tool descriptions: that is what separates a good ranking from
keyword matching.
"""

from __future__ import annotations

from typing import Any

# key -> (tool name, arguments, result)
CALLS: dict[str, tuple[str, dict[str, Any], Any]] = {
    # -- finance ------------------------------------------------------------------
    "aapl_income": (
        "get_income_statements",
        {"ticker": "AAPL", "period": "annual", "limit": 2},
        [
            {"fiscal_year": 2025, "revenue": 416_161_000_000, "net_income": 112_010_000_000, "eps": 7.46},
            {"fiscal_year": 2024, "revenue": 391_035_000_000, "net_income": 93_736_000_000, "eps": 6.08},
        ],
    ),
    "msft_income": (
        "get_income_statements",
        {"ticker": "MSFT", "period": "quarterly", "limit": 1},
        [{"quarter": "2026Q1", "revenue": 77_670_000_000, "net_income": 27_750_000_000, "eps": 3.72}],
    ),
    "nvda_price": ("get_stock_price", {"ticker": "NVDA"}, {"price": 188.12, "change_pct": 3.4, "volume": 241_000_000}),
    "tsla_price": ("get_stock_price", {"ticker": "TSLA"}, {"price": 412.7, "change_pct": -1.9, "volume": 98_000_000}),
    "aapl_balance": (
        "get_balance_sheets",
        {"ticker": "AAPL", "period": "annual", "limit": 1},
        [
            {
                "fiscal_year": 2025,
                "total_assets": 359_241_000_000,
                "total_debt": 98_657_000_000,
                "cash": 35_934_000_000,
            }
        ],
    ),
    "amzn_cashflow": (
        "get_cash_flow_statements",
        {"ticker": "AMZN", "period": "annual", "limit": 1},
        [{"fiscal_year": 2025, "operating_cash_flow": 139_514_000_000, "capital_expenditure": -128_320_000_000}],
    ),
    "tsla_news": (
        "get_company_news",
        {"ticker": "TSLA", "limit": 3},
        [
            {"title": "Tesla recalls 46,000 Cybertrucks over loose exterior panel", "date": "2026-11-18"},
            {"title": "Tesla Semi deliveries begin in Europe", "date": "2026-11-15"},
            {"title": "Shareholders approve board compensation plan", "date": "2026-11-10"},
        ],
    ),
    "msft_estimates": (
        "get_analyst_estimates",
        {"ticker": "MSFT", "period": "quarterly"},
        {"next_quarter_eps_consensus": 3.91, "analysts": 42, "revenue_consensus": 80_120_000_000},
    ),
    "nvda_filing": (
        "search_filings",
        {"ticker": "NVDA", "form": "10-K", "year": 2026},
        [{"form": "10-K", "filed": "2026-02-26", "section": "Risk Factors", "excerpt": "export restrictions to China"}],
    ),
    "fx_eur_usd": (
        "convert_currency",
        {"amount": 1200, "from_currency": "EUR", "to_currency": "USD"},
        {"result": 1389.6},
    ),
    # -- coding ---------------------------------------------------------------------
    "search_discount": (
        "search_code",
        {"query": "discount", "path": "src/"},
        [
            {"file": "src/checkout/pricing.py", "line": 41, "text": "def apply_discount(cart, coupon):"},
            {"file": "src/checkout/tests/test_pricing.py", "line": 12, "text": "def test_apply_discount_rounding():"},
        ],
    ),
    "read_pricing": (
        "read_file",
        {"path": "src/checkout/pricing.py"},
        "from decimal import Decimal\n\ndef apply_discount(cart, coupon):\n    rate = Decimal(coupon.percent) / 100\n"
        "    return (cart.total * (1 - rate)).quantize(Decimal('0.01'))\n",
    ),
    "read_settings": (
        "read_file",
        {"path": "config/settings.yaml"},
        "database:\n  host: db.internal\n  pool_size: 20\nfeature_flags:\n  new_checkout: true\n",
    ),
    "list_src": ("list_directory", {"path": "src/auth"}, ["__init__.py", "jwt.py", "oauth.py", "sessions.py"]),
    "tests_payments": (
        "run_tests",
        {"path": "tests/payments"},
        {
            "passed": 48,
            "failed": 2,
            "failures": [
                {"test": "test_refund_partial_amount", "error": "AssertionError: 19.99 != 20.00"},
                {"test": "test_currency_rounding_jpy", "error": "ValueError: JPY has no minor unit"},
            ],
        },
    ),
    "tests_auth": ("run_tests", {"path": "tests/auth"}, {"passed": 31, "failed": 0, "failures": []}),
    "git_log_auth": (
        "git_log",
        {"path": "src/auth", "limit": 3},
        [
            {"sha": "9f3a1c2", "author": "dana", "message": "Rotate JWT signing keys every 24h"},
            {"sha": "77b02de", "author": "li", "message": "OAuth: accept PKCE verifier from mobile app"},
            {"sha": "1a2b3c4", "author": "dana", "message": "Session cookies: SameSite=Lax"},
        ],
    ),
    "git_diff_head": (
        "git_diff",
        {"ref": "HEAD~1"},
        "diff --git a/src/auth/jwt.py b/src/auth/jwt.py\n"
        "-KEY_TTL = timedelta(days=7)\n+KEY_TTL = timedelta(hours=24)\n",
    ),
    "lint_checkout": (
        "run_linter",
        {"path": "src/checkout"},
        [{"file": "src/checkout/cart.py", "line": 88, "code": "F841", "message": "local variable 'tax' is never used"}],
    ),
    "deps": (
        "list_dependencies",
        {"manifest": "pyproject.toml"},
        {"fastapi": "0.115.0", "sqlalchemy": "2.0.36", "pydantic": "2.10.3", "stripe": "11.1.0"},
    ),
    # -- web research ----------------------------------------------------------------
    "web_rust_async": (
        "web_search",
        {"query": "rust async runtime comparison"},
        [
            {"title": "Tokio vs async-std vs smol in 2026", "url": "https://blog.example.com/rust-runtimes"},
            {"title": "Choosing an executor for embedded Rust", "url": "https://embedded.example.org/executors"},
        ],
    ),
    "fetch_runtimes": (
        "fetch_page",
        {"url": "https://blog.example.com/rust-runtimes"},
        "Tokio remains the default choice for network services thanks to its mature ecosystem. "
        "async-std development has slowed, while smol is favoured for small binaries.",
    ),
    "web_sourdough": (
        "web_search",
        {"query": "sourdough starter not rising"},
        [{"title": "Why your starter is sluggish: temperature and flour", "url": "https://bake.example.com/starter"}],
    ),
    "fetch_starter": (
        "fetch_page",
        {"url": "https://bake.example.com/starter"},
        "A starter kept below 20 °C ferments slowly. Feed it whole rye flour and keep it near 26 °C.",
    ),
    "wiki_photosynthesis": (
        "fetch_page",
        {"url": "https://en.wikipedia.org/wiki/Photosynthesis"},
        "Photosynthesis converts light energy into chemical energy stored in glucose; chlorophyll absorbs "
        "mostly blue and red light.",
    ),
    # -- travel -----------------------------------------------------------------------------
    "flights_bos_lis": (
        "search_flights",
        {"origin": "BOS", "destination": "LIS", "date": "2026-06-14"},
        [
            {"carrier": "TAP Air Portugal", "depart": "21:35", "arrive": "09:20+1", "price_usd": 642, "stops": 0},
            {"carrier": "United", "depart": "17:10", "arrive": "11:45+1", "price_usd": 588, "stops": 1},
        ],
    ),
    "flights_lis_bos": (
        "search_flights",
        {"origin": "LIS", "destination": "BOS", "date": "2026-06-28"},
        [{"carrier": "TAP Air Portugal", "depart": "11:05", "arrive": "14:10", "price_usd": 701, "stops": 0}],
    ),
    "weather_lisbon": (
        "get_weather",
        {"city": "Lisbon", "date": "2026-06-15"},
        {"summary": "light showers in the afternoon", "high_c": 24, "low_c": 16, "precipitation_mm": 3},
    ),
    "weather_boston": (
        "get_weather",
        {"city": "Boston", "date": "2026-06-14"},
        {"summary": "clear", "high_c": 27, "low_c": 18, "precipitation_mm": 0},
    ),
    "hotels_lisbon": (
        "search_hotels",
        {"city": "Lisbon", "checkin": "2026-06-15", "nights": 5},
        [
            {"name": "Casa do Alfama", "stars": 4, "price_per_night_eur": 180, "neighbourhood": "Alfama"},
            {"name": "Baixa Central", "stars": 3, "price_per_night_eur": 115, "neighbourhood": "Baixa"},
        ],
    ),
    "visa_portugal": (
        "web_search",
        {"query": "Portugal entry requirements US citizens"},
        [{"title": "ETIAS travel authorisation required from 2026", "url": "https://travel.example.gov/etias"}],
    ),
    # -- devops -----------------------------------------------------------------------------
    "pods_payments": (
        "get_pod_status",
        {"namespace": "payments"},
        [
            {"pod": "checkout-api-7d9f", "status": "CrashLoopBackOff", "restarts": 14},
            {"pod": "ledger-5c2a", "status": "Running", "restarts": 0},
        ],
    ),
    "logs_checkout": (
        "get_logs",
        {"service": "checkout-api", "since": "1h"},
        "12:01:07 ERROR Killed: container exceeded memory limit 512Mi (OOMKilled)\n"
        "12:01:09 INFO starting checkout-api v2.3.1\n",
    ),
    "logs_gateway": (
        "get_logs",
        {"service": "api-gateway", "since": "1h"},
        "12:00:00 WARN upstream checkout-api unavailable, returning 503\n",
    ),
    "metrics_latency": (
        "query_metrics",
        {"metric": "http_request_duration_seconds", "quantile": 0.99, "window": "15m"},
        {"series": [{"service": "api-gateway", "p99_seconds": 1.84}, {"service": "search", "p99_seconds": 0.21}]},
    ),
    "metrics_cpu": (
        "query_metrics",
        {"metric": "container_cpu_usage", "window": "1h"},
        {"series": [{"service": "search", "cores": 3.2}, {"service": "ledger", "cores": 0.4}]},
    ),
    "alerts": (
        "list_alerts",
        {"severity": "critical"},
        [{"alert": "CheckoutErrorRateHigh", "since": "11:58", "runbook": "https://runbooks.example.com/checkout"}],
    ),
    "deploys": (
        "list_deployments",
        {"namespace": "payments", "limit": 2},
        [
            {"service": "checkout-api", "version": "v2.3.1", "at": "11:55", "by": "ci"},
            {"service": "ledger", "version": "v1.9.0", "at": "yesterday", "by": "ci"},
        ],
    ),
    # -- email and calendar -------------------------------------------------------------------
    "email_contract": (
        "search_email",
        {"query": "contract", "from": "sarah@acme.example"},
        [
            {
                "id": "m-4411",
                "from": "Sarah Chen",
                "subject": "Re: MSA contract redlines",
                "snippet": "Legal signed off on clause 7",
            }
        ],
    ),
    "email_invoice": (
        "search_email",
        {"query": "invoice overdue"},
        [{"id": "m-4390", "from": "billing@cloud.example", "subject": "Invoice #8812 is 15 days overdue"}],
    ),
    "read_email_contract": (
        "read_email",
        {"id": "m-4411"},
        "Hi, legal signed off on clause 7 (liability cap 2x fees). We can countersign Thursday. Sarah",
    ),
    "calendar_thursday": (
        "get_calendar",
        {"date": "2026-11-26"},
        [
            {"time": "10:00", "title": "Contract signing with Acme", "attendees": ["Sarah Chen"]},
            {"time": "15:00", "title": "Dentist"},
        ],
    ),
    "calendar_friday": ("get_calendar", {"date": "2026-11-27"}, [{"time": "09:30", "title": "Quarterly planning"}]),
    "contacts": (
        "lookup_contact",
        {"name": "Sarah Chen"},
        {"email": "sarah@acme.example", "phone": "+1 617 555 0142", "company": "Acme"},
    ),
}

# question -> keys of the calls that answer it
QUERIES: dict[str, set[str]] = {
    "How much revenue did Apple make in its last fiscal year?": {"aapl_income"},
    "What was Microsoft's earnings per share last quarter?": {"msft_income"},
    "Is Nvidia's stock up or down today?": {"nvda_price"},
    "How did Tesla shares trade today?": {"tsla_price"},
    "How much cash and debt does Apple have?": {"aapl_balance"},
    "How much did Amazon spend on capex?": {"amzn_cashflow"},
    "Has Tesla recalled any vehicles recently?": {"tsla_news"},
    "What EPS do analysts expect from Microsoft next quarter?": {"msft_estimates"},
    "What risks did Nvidia report about China in its annual report?": {"nvda_filing"},
    "How many dollars is 1200 euros?": {"fx_eur_usd"},
    "Where is the coupon discount applied in checkout?": {"search_discount", "read_pricing"},
    "How is the discounted price rounded?": {"read_pricing"},
    "What is the database pool size in the settings?": {"read_settings"},
    "Which files are in the auth package?": {"list_src"},
    "Why are the payment tests failing?": {"tests_payments"},
    "Do the auth tests pass?": {"tests_auth"},
    "Who changed the JWT key rotation and what did they change?": {"git_log_auth", "git_diff_head"},
    "Are there lint warnings in the cart code?": {"lint_checkout"},
    "Which version of Stripe's library do we depend on?": {"deps"},
    "Which Rust async runtime should a network service use?": {"web_rust_async", "fetch_runtimes"},
    "Why is my sourdough starter not rising?": {"web_sourdough", "fetch_starter"},
    "Which colours of light does chlorophyll absorb?": {"wiki_photosynthesis"},
    "Find me a nonstop flight from Boston to Lisbon": {"flights_bos_lis"},
    "How do I get back from Lisbon at the end of June?": {"flights_lis_bos"},
    "Will it rain in Lisbon on the 15th?": {"weather_lisbon"},
    "What's the weather when we leave Boston?": {"weather_boston"},
    "Where should we stay in Lisbon and how much per night?": {"hotels_lisbon"},
    "Do US citizens need a visa or authorisation for Portugal?": {"visa_portugal"},
    "Why is the checkout service crash looping?": {"pods_payments", "logs_checkout"},
    "Why does the gateway return 503?": {"logs_gateway", "logs_checkout"},
    "What is the p99 latency of the API gateway?": {"metrics_latency"},
    "Which service uses the most CPU?": {"metrics_cpu"},
    "Which critical alerts are firing?": {"alerts"},
    "What was deployed to payments before the outage?": {"deploys"},
    "Did Sarah get back to us about the contract?": {"email_contract", "read_email_contract"},
    "Which invoices are overdue?": {"email_invoice"},
    "When are we signing with Acme?": {"calendar_thursday", "read_email_contract"},
    "What's on my calendar on Friday?": {"calendar_friday"},
    "What is Sarah Chen's phone number?": {"contacts"},
    "What liability cap did legal agree to?": {"read_email_contract"},
}
