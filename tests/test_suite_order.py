"""tests/conftest.py's ordering: modules with a ``slow`` test first, each module whole and in its order."""

from tests.conftest import module_order


class Item:
    def __init__(self, nodeid: str, slow: bool = False):
        self.nodeid, self.slow = nodeid, slow

    def get_closest_marker(self, name):
        return object() if (name == "slow" and self.slow) else None


def test_modules_with_a_slow_test_come_first_whole_and_in_order():
    items = [
        Item("tests/a.py::t1"),
        Item("tests/b.py::t1"),
        Item("tests/b.py::t2", slow=True),
        Item("tests/b.py::t3"),
        Item("tests/c.py::t1"),
        Item("tests/d.py::t1[x]", slow=True),
    ]
    ordered = [i.nodeid for i in module_order(items)]
    assert ordered == [
        "tests/b.py::t1",
        "tests/b.py::t2",
        "tests/b.py::t3",
        "tests/d.py::t1[x]",
        "tests/a.py::t1",
        "tests/c.py::t1",
    ]


def test_without_slow_tests_the_order_is_unchanged():
    items = [Item(f"tests/m{i % 3}.py::t{i}") for i in range(9)]
    assert module_order(items) == items
