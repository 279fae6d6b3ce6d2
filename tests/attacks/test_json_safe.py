"""The project's JSON sanitiser never writes NaN or Infinity tokens."""

import json
import math

import numpy as np

from attacks.files import dumps_json


def test_non_finite_numbers_become_strings_and_arrays_lists():
    text = dumps_json({"eps": math.inf, "neg": np.float64(-math.inf), "bad": float("nan"), "xs": np.arange(3)})
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"eps": "inf", "neg": "-inf", "bad": "nan", "xs": [0, 1, 2]}
