"""Synthetic streams with the shapes and class ratios of datasets that are not available offline.

:func:`linear_stream` and :func:`covtype_like` are for scale and numerical tests (memory, time, float32 against
float64), not for accuracy claims. :func:`payments` is a table of generated card payments with a rare fraud
label, for the table-to-alerts path (:func:`jcsol.features.load_table`, :mod:`jcsol.alerts`) and its examples.
"""

from __future__ import annotations

import numpy as np


def linear_stream(
    n_rows: int, n_features: int, positive_fraction: float, *, noise: float = 1.0, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian rows labelled by a noisy linear rule, thresholded to the given share of positives.

    Rows are L2-normalised float32; labels int8 ±1 with ``round(positive_fraction · n_rows)`` positives.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, n_features)) @ (
        np.eye(n_features) + 0.3 * rng.standard_normal((n_features, n_features))
    )
    score = X @ rng.standard_normal(n_features) + noise * rng.standard_normal(n_rows)
    y = np.where(score >= np.quantile(score, 1.0 - positive_fraction), 1, -1).astype(np.int8)
    return _normalised(X), y


def covtype_like(n_rows: int = 581_012, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A stream shaped like covtype.binary: 54 features — 10 correlated continuous ones, a one-hot of 4
    (wilderness area) and a one-hot of 40 (soil type) — and balanced classes (1:1), L2-normalised."""
    rng = np.random.default_rng(seed)
    continuous = rng.standard_normal((n_rows, 10)) @ (np.eye(10) + 0.5 * rng.standard_normal((10, 10)))
    area = rng.integers(0, 4, n_rows)
    soil = np.minimum(rng.geometric(0.12, n_rows) - 1, 39)
    X = np.zeros((n_rows, 54))
    X[:, :10] = continuous
    X[np.arange(n_rows), 10 + area] = 1.0
    X[np.arange(n_rows), 14 + soil] = 1.0
    score = (
        continuous @ rng.standard_normal(10)
        + rng.standard_normal(4)[area]
        + rng.standard_normal(40)[soil]
        + 1.5 * rng.standard_normal(n_rows)
    )
    y = np.where(score >= np.median(score), 1, -1).astype(np.int8)
    return _normalised(X), y


#: The countries and devices of :func:`payments`, and the countries that drive its fraud (with a few merchants).
PAYMENT_COUNTRIES = tuple("DE FR GB NL ES IT US PL SE BE AT PT IE DK CZ RO NG BR UA VN".split())
PAYMENT_DEVICES = ("ios", "android", "web", "pos", "api")
RISKY_COUNTRIES = ("NG", "UA", "VN")


def payments(n_rows: int = 50_000, *, fraud: float = 0.01, seed: int = 0):
    """A pandas ``DataFrame`` of ``n_rows`` generated card payments over about 30 days, a share ``fraud`` of them
    fraudulent, the same for the same ``seed``.

    Columns: ``payment_id`` (distinct increasing integers), ``ts`` (ISO 8601 text ``YYYY-MM-DDTHH:MM:SS``,
    strictly increasing from 2024-03-01 over 30 days — one second apart at least, so longer for more rows than
    seconds in 30 days —, fewer payments at night), ``amount`` (lognormal, median about 37, rounded to the cent),
    ``merchant`` (``"M0000"`` …, 300 merchants of very unequal popularity), ``country`` (one of
    :data:`PAYMENT_COUNTRIES`, most payments domestic), ``device`` (one of :data:`PAYMENT_DEVICES`) and ``fraud``
    (0 or 1).

    **How the fraud is generated.** Each payment has a log-odds of fraud, the sum of: a few merchants' risk (6
    mid-popular merchants, +2.5 to +3.5; every merchant a small effect of its own, standard deviation 0.3), the
    countries :data:`RISKY_COUNTRIES` (+2.0; every country a small effect, standard deviation 0.2), the devices
    ``web`` (+0.8), ``api`` (+2.0) and ``pos`` (−1.0), the night hours 0–5 (+1.8), large amounts (+1.0 per unit
    of log amount above the median), one interaction (``api`` payments at night, +1.0, which a linear model of the
    columns cannot represent) and Gaussian noise of standard deviation 1 that no column records; an intercept
    found by bisection makes the mean probability ``fraud``, and each label is drawn from its probability. So the
    label is predictable from the columns, not determined by them: the probabilities themselves rank the
    payments with a ROC AUC of about 0.9, a logistic regression of the one-hot columns fitted on half of 100,000
    rows about 0.86 on the other half, and the online linear learners (COG, ACOG-diag) of the encoded table
    (:func:`jcsol.features.load_table`) about 0.8 over their pre-update scores of 50,000 rows (0.70–0.75 over
    20,000: fewer positives to learn from).

    pandas is imported here (an optional dependency: ``pip install jcsol[pandas]``).

    >>> from jcsol.datasets import synthetic
    >>> frame = synthetic.payments(2_000, seed=1)
    >>> list(frame.columns), len(frame), bool(frame.ts.is_monotonic_increasing)
    (['payment_id', 'ts', 'amount', 'merchant', 'country', 'device', 'fraud'], 2000, True)
    """
    import pandas as pd

    if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or n_rows < 1:
        raise ValueError(f"n_rows must be a positive integer, got {n_rows!r}")
    if isinstance(fraud, bool) or not isinstance(fraud, (int, float, np.integer, np.floating)) or not 0 < fraud < 1:
        raise ValueError(f"fraud must be a share in (0, 1), got {fraud!r}")
    n = int(n_rows)
    rng = np.random.default_rng(seed)
    # moments: a day's profile (night hours quiet), sorted, then made strictly increasing second by second
    profile = np.array([2, 1, 1, 1, 1, 2, 4, 6, 8, 9, 9, 9, 10, 10, 9, 9, 9, 9, 10, 10, 9, 7, 5, 3], np.float64)
    seconds = (
        rng.integers(0, 30, n) * 86_400
        + rng.choice(24, n, p=profile / profile.sum()) * 3_600
        + rng.integers(0, 3_600, n)
    )
    seconds = np.sort(seconds) - np.arange(n)
    seconds = np.maximum.accumulate(seconds) + np.arange(n)
    hour = (seconds // 3_600) % 24
    ts = np.datetime_as_string(np.datetime64("2024-03-01T00:00:00") + seconds.astype("timedelta64[s]"), unit="s")
    # merchants: 300 of Zipf-like popularity; 6 of the middle ranks are the risky ones
    popularity = 1.0 / (np.arange(300) + 5.0)
    merchant = rng.choice(300, n, p=popularity / popularity.sum())
    merchant_risk = 0.3 * rng.standard_normal(300)
    risky = rng.choice(np.arange(20, 120), 6, replace=False)
    merchant_risk[risky] += rng.uniform(2.5, 3.5, 6)
    # countries: most payments domestic, a tail abroad
    share = np.array([40, 8, 6, 6, 5, 5, 4, 3, 3, 3, 2, 2, 2, 2, 2, 2, 1.5, 1.5, 1.5, 1.5])
    country = rng.choice(len(PAYMENT_COUNTRIES), n, p=share / share.sum())
    country_risk = 0.2 * rng.standard_normal(len(PAYMENT_COUNTRIES))
    country_risk[[PAYMENT_COUNTRIES.index(c) for c in RISKY_COUNTRIES]] += 2.0
    device = rng.choice(len(PAYMENT_DEVICES), n, p=[0.3, 0.3, 0.2, 0.15, 0.05])
    device_risk = np.array([0.0, 0.0, 0.8, -1.0, 2.0])
    log_amount = 3.6 + rng.standard_normal(n)
    night = hour < 6
    api = device == PAYMENT_DEVICES.index("api")
    logit = (
        merchant_risk[merchant]
        + country_risk[country]
        + device_risk[device]
        + 1.8 * night
        + 1.0 * np.maximum(log_amount - 3.6, 0.0)
        + 1.0 * (night & api)
        + rng.standard_normal(n)
    )
    low, high = -30.0, 30.0  # the intercept whose mean probability is ``fraud``
    for _ in range(100):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if np.mean(_sigmoid(logit + mid)) < fraud else (low, mid)
    label = rng.random(n) < _sigmoid(logit + 0.5 * (low + high))
    return pd.DataFrame(
        {
            "payment_id": 1_000_000 + np.cumsum(rng.integers(1, 20, n)),
            "ts": ts.astype(object),
            "amount": np.round(np.exp(log_amount), 2),
            "merchant": np.array([f"M{m:04d}" for m in range(300)], dtype=object)[merchant],
            "country": np.array(PAYMENT_COUNTRIES, dtype=object)[country],
            "device": np.array(PAYMENT_DEVICES, dtype=object)[device],
            "fraud": label.astype(np.int64),
        }
    )


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _normalised(X: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return (X / np.where(norms > 0, norms, 1.0)).astype(np.float32)
