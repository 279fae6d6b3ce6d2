import json

import numpy as np

from dpfed.transcript import BROADCAST, SERVER, Transcript, agent_name


def test_add_filter_and_to_dict_roundtrip():
    t = Transcript()
    t.add(1, agent_name(0), SERVER, "upload", np.array([1.0, 2.0]))
    t.add(1, SERVER, BROADCAST, "broadcast", np.array([[0.5]]))
    t.add(2, agent_name(1), SERVER, "upload", np.float64(3.0))
    assert len(t) == 3
    assert [m.round for m in t.filter(name="upload")] == [1, 2]
    assert t.filter(sender=SERVER)[0].name == "broadcast"
    assert t.filter(name="upload", sender="agent1")[0].payload == 3.0
    d = t.to_dict()
    text = json.dumps(d)  # must be JSON serialisable
    back = Transcript.from_dict(json.loads(text))
    assert back.to_dict() == d
