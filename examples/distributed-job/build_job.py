"""Build the example job: a data-parallel MLP step with HCCL collectives, 2 servers x 8 ranks.

Writes ``dp_mlp.onnx`` (MatMul -> Relu -> MatMul, the "gradient" AllReduce'd with
onnxruntime's ``com.microsoft`` AllReduce, an AllGather of the activations in geplug's
``geplug.hccl`` domain), ``rank_table.json`` (v1.0, two Atlas 800T A2 servers of 8 NPUs, as
HCCL's rank-table guide shows it) and ``profiling.toml`` (task_time + training_trace).

Run: ``python build_job.py DIR`` then
``geplug run DIR/dp_mlp.onnx --rank-table DIR/rank_table.json --product atlas_a2
--config DIR/profiling.toml``.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RANKS = 16
SERVERS = 2


def model() -> onnx.ModelProto:
    """The job's ONNX model (every rank runs it: SPMD)."""
    rng = np.random.default_rng(7)
    w1 = numpy_helper.from_array(rng.standard_normal((64, 128)).astype(np.float32) * 0.1, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((128, 32)).astype(np.float32) * 0.1, "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["a"], name="relu"),
        helper.make_node("MatMul", ["a", "w2"], ["g"], name="fc2"),
        helper.make_node("AllReduce", ["g"], ["g_sum"], name="grad_allreduce",
                         domain="com.microsoft", group_size=RANKS),
        helper.make_node("HcomAllGather", ["a"], ["a_all"], name="act_allgather",
                         domain="geplug.hccl", axis=0),
    ]
    graph = helper.make_graph(
        nodes, "dp_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 64])],
        [helper.make_tensor_value_info("g_sum", TensorProto.FLOAT, [16, 32]),
         helper.make_tensor_value_info("a_all", TensorProto.FLOAT, [16 * RANKS, 128])],
        [w1, w2])
    return helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1),
        helper.make_opsetid("geplug.hccl", 1)])


def rank_table() -> dict[str, object]:
    """A v1.0 rank table of two 8-NPU servers (device_ip = address_<id> of hccn.conf)."""
    servers = []
    for s in range(SERVERS):
        devices = [{"device_id": str(d), "device_ip": f"192.168.{s}.{d + 1}",
                    "rank_id": str(s * 8 + d)} for d in range(8)]
        servers.append({"server_id": f"10.0.0.{s + 1}", "device": devices})
    return {"status": "completed", "version": "1.0", "server_count": str(SERVERS),
            "server_list": servers}


PROFILING = """\
profiling_mode = true

[profiling_options]
output = "prof"
task_time = "on"
training_trace = "on"
"""


def main(out: str) -> None:
    """Write the three files into ``out``."""
    os.makedirs(out, exist_ok=True)
    onnx.save(model(), os.path.join(out, "dp_mlp.onnx"))
    with open(os.path.join(out, "rank_table.json"), "w", encoding="utf-8") as fh:
        json.dump(rank_table(), fh, indent=2)
    with open(os.path.join(out, "profiling.toml"), "w", encoding="utf-8") as fh:
        fh.write(PROFILING)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
