"""Helpers for the GenRM pool / serve-judge tests: prompts for the tiny model, an event loop in a
background thread (a pool lives in one loop across tests), and the expected greedy outputs computed
with transformers directly, one request at a time."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Coroutine

PROMPTS = [
    [{"role": "user", "content": "Write a story about a lighthouse. " * k + " good bad [[A]]" * (k % 3)}]
    for k in range(1, 13)
]


async def gather(*coros):
    """``asyncio.gather`` as a coroutine, to hand to another thread's loop."""
    return await asyncio.gather(*coros)


class LoopThread:
    """An asyncio loop running in a daemon thread; ``run(coro)`` waits for the result."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine, timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


def direct_greedy(model_dir, messages_list, max_new_tokens: int) -> list[dict]:
    """Reference outputs: plain transformers generate, one unpadded request at a time."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
    eos = tokenizer.eos_token_id
    outputs = []
    for messages in messages_list:
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        with torch.inference_mode():
            out = model.generate(
                input_ids=ids,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                eos_token_id=eos,
                pad_token_id=tokenizer.pad_token_id,
                top_k=None,
                temperature=None,
                top_p=None,
            )
        new = out[0, ids.shape[1] :].tolist()
        stopped = eos in new
        kept = new[: new.index(eos)] if stopped else new
        outputs.append(
            {
                "text": tokenizer.decode(kept, skip_special_tokens=True),
                "finish_reason": "stop" if stopped else "length",
                "prompt_tokens": ids.shape[1],
                "completion_tokens": len(kept) + (1 if stopped else 0),
            }
        )
    return outputs


async def start_site(app):
    """Serve an aiohttp app on 127.0.0.1 (a free port) in the running loop: (runner, port)."""
    from aiohttp import web

    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]
