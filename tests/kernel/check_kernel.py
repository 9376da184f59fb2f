#!/usr/bin/python3
# tests/kernel/check_kernel.py -- rlx-kernel driven headless through Jupyter's own client code
# (Debian's python3-nbclient and python3-jupyter-client), with the kernelspec from the build tree.
#
#   check_kernel.py notebook KERNEL_JSON NOTEBOOK    executes the notebook, checks its outputs
#   check_kernel.py interrupt KERNEL_JSON            the notebook's interrupt stops a running cell
#   check_kernel.py complete KERNEL_JSON             complete and is_complete requests
#
# KERNEL_JSON is copied into a temporary JUPYTER_PATH as kernels/rlx/kernel.json.
import os
import shutil
import struct
import sys
import tempfile
import time
import base64

# fail() and check() as the REPL's tests report: one "FAILED: ..." line, exit status 1.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "repl"))
from check_repl import check, fail  # noqa: E402

TIMEOUT = 120


def use_kernelspec(kernel_json, tmp):
    spec_dir = os.path.join(tmp, "kernels", "rlx")
    os.makedirs(spec_dir)
    shutil.copy(kernel_json, os.path.join(spec_dir, "kernel.json"))
    os.environ["JUPYTER_PATH"] = tmp
    os.environ["JUPYTER_RUNTIME_DIR"] = os.path.join(tmp, "runtime")
    os.environ["JUPYTER_DATA_DIR"] = os.path.join(tmp, "data")


def text_of(output):
    if output["output_type"] == "stream":
        return output["text"]
    return output.get("data", {}).get("text/plain", "")


def png_size(b64):
    """(width, height, color type) from a PNG's IHDR chunk."""
    data = base64.b64decode(b64)
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "image/png is not a PNG file")
    check(data[12:16] == b"IHDR", "the PNG does not start with IHDR")
    width, height, _, color = struct.unpack(">IIBB", data[16:26])
    return width, height, color


def notebook(kernel_json, path):
    import nbformat
    from nbclient import NotebookClient
    with tempfile.TemporaryDirectory() as tmp:
        use_kernelspec(kernel_json, tmp)
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, kernel_name="rlx", timeout=TIMEOUT, allow_errors=True,
                                startup_timeout=60)
        client.execute()
    outs = [cell.outputs for cell in nb.cells]

    def only(i, kind):
        got = [o for o in outs[i] if o["output_type"] == kind]
        check(len(got) == 1, f"cell {i + 1}: expected one {kind}, got {outs[i]}")
        return got[0]

    check(outs[0] == [], f"cell 1 (definitions) printed {outs[0]}")
    check(text_of(only(1, "execute_result")) == "tensor(6., f32[])",
          f"cell 2: a.sum() gave {outs[1]}")
    check(text_of(only(2, "execute_result")) == "42",
          f"cell 3: a definition of cell 1 gave {outs[2]}")
    stream = only(3, "stream")
    check(stream["name"] == "stdout" and stream["text"] == "hello from cell 4\n",
          f"cell 4: printf gave {outs[3]}")
    gray = only(4, "display_data")
    check(png_size(gray["data"]["image/png"]) == (48, 32, 0),
          f"cell 5: the gray image is {png_size(gray['data']['image/png'])}, expected 48x32 gray")
    check(gray["data"]["text/plain"].startswith("tensor([[0.0000e+00, 6.5147e-04,"),
          f"cell 5: the image's text is {gray['data']['text/plain'][:60]!r}")
    rgb = only(5, "display_data")
    check(png_size(rgb["data"]["image/png"]) == (16, 8, 2),
          f"cell 6: the RGB image is {png_size(rgb['data']['image/png'])}, expected 16x8 RGB")
    text = only(6, "display_data")
    check("image/png" not in text["data"] and
          text["data"]["text/plain"] == "tensor([1., 1., 1., 1., 1.], f32[5])",
          f"cell 7: a 1-D tensor displayed as {text['data']}")
    err = only(7, "error")
    check(err["ename"] == "rlx::Error" and "[2,3]" in err["evalue"] and "[4]" in err["evalue"],
          f"cell 8: the shape error came back as {err}")
    check(any("In[8]:2" in line for line in err["traceback"]),
          f"cell 8: the traceback does not name the cell's line: {err['traceback']}")
    err = only(8, "error")
    check(err["ename"] == "CompileError" and
          "use of undeclared identifier 'not_declared_anywhere'" in err["evalue"],
          f"cell 9: the compile error came back as {err}")
    check(text_of(only(9, "execute_result")) ==
          "tensor([[2., 2., 2.],\n        [2., 2., 2.]], f32[2,3])",
          f"cell 10: grad of a lambda gave {outs[9]}")
    print(f"the notebook's {len(outs)} cells gave the expected values, images and errors")


def run(kc, code, timeout=TIMEOUT):
    """Execute `code`; returns (reply content, outputs as (msg_type, content))."""
    msg_id = kc.execute(code)
    outputs = []
    deadline = time.monotonic() + timeout
    while True:
        msg = kc.get_iopub_msg(timeout=max(1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "status" and msg["content"]["execution_state"] == "idle":
            break
        if kind in ("stream", "execute_result", "display_data", "error"):
            outputs.append((kind, msg["content"]))
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    return reply["content"], outputs


def start(kernel_json, tmp):
    from jupyter_client.manager import start_new_kernel
    use_kernelspec(kernel_json, tmp)
    km, kc = start_new_kernel(kernel_name="rlx", startup_timeout=60)
    return km, kc


def interrupt(kernel_json):
    import threading
    with tempfile.TemporaryDirectory() as tmp:
        km, kc = start(kernel_json, tmp)
        try:
            reply, _ = run(kc, "int kept = 5;")
            check(reply["status"] == "ok", f"a definition failed: {reply}")
            cases = [
                # rlx work stops at its next safe point
                ('std::puts("looping"); for (;;) rlx::detail::check_interrupt("a loop");',
                 "rlx::Error", "interrupted in a loop"),
                # plain C++ never reaches one: abandoned after the grace period
                ('std::puts("looping"); while (true) {}', "Interrupted",
                 "interrupted (Ctrl-C) and abandoned"),
            ]
            for n, (code, ename, evalue) in enumerate(cases, 1):
                timer = threading.Timer(1.5, km.interrupt_kernel)
                timer.start()
                t0 = time.monotonic()
                reply, outputs = run(kc, code)
                timer.join()
                check(reply["status"] == "error" and reply["ename"] == ename and
                      evalue in reply["evalue"],
                      f"case {n}: the interrupted cell replied {reply}")
                check(("error", ) == tuple(k for k, _ in outputs if k == "error"),
                      f"case {n}: outputs {outputs}")
                check(time.monotonic() - t0 < 30, f"case {n}: the interrupt took too long")
                reply, outputs = run(kc, f"kept + {n}")
                check(reply["status"] == "ok" and
                      [c["data"]["text/plain"] for k, c in outputs if k == "execute_result"]
                      == [str(5 + n)],
                      f"case {n}: after the interrupt, kept + {n} gave {reply} {outputs}")
            check(km.is_alive(), "the kernel died")
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    print("the notebook's interrupt stopped a cell at rlx's safe point and a plain C++ loop; "
          "the kernel kept its definitions")


def complete(kernel_json):
    with tempfile.TemporaryDirectory() as tmp:
        km, kc = start(kernel_json, tmp)
        try:
            code = "auto r = rlx::ara"
            reply = kc.complete(code, len(code), reply=True, timeout=TIMEOUT)["content"]
            check("arange" in reply["matches"] and reply["cursor_start"] == len(code) - 3 and
                  reply["cursor_end"] == len(code), f"completing rlx::ara replied {reply}")
            kc.is_complete("for (int i = 0; i < 3; ++i) {")
            reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
            check(reply["status"] == "incomplete", f"an open block is {reply}")
            kc.is_complete("int x = 1;")
            reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
            check(reply["status"] == "complete", f"a declaration is {reply}")
            info = kc.kernel_info(reply=True, timeout=TIMEOUT)["content"]
            check(info["language_info"]["name"] == "c++", f"kernel_info: {info}")
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    print("complete, is_complete and kernel_info answer")


def main():
    mode, kernel_json, *rest = sys.argv[1:]
    if mode == "notebook":
        notebook(kernel_json, *rest)
    elif mode == "interrupt":
        interrupt(kernel_json)
    elif mode == "complete":
        complete(kernel_json)
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
