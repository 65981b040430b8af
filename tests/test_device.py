"""Where the model runs and in which precision: a CUDA GPU when there is one (mocked here: the tests run on CPUs),
bfloat16 or float16 there, and the CPU path as it always was."""

import pytest
import torch

from modeldir.device import fast_cpu_dtype, fast_dtype, pick_device
from modeldir.directory import open_model
from transformer.model import Transformer


@pytest.fixture
def gpu(monkeypatch):
    """CUDA made to look present, of compute capability `gpu(major, minor)`."""

    def present(capability):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)

    return present


@pytest.fixture
def moves(monkeypatch):
    """The devices the model is sent to; a move to CUDA is recorded and skipped (no GPU here), others happen."""
    seen, real_to = [], Transformer.to

    def to(self, *args, **kwargs):
        device = next((a for a in args if isinstance(a, torch.device)), None)
        if device is not None:
            seen.append(device)
            if device.type == "cuda":
                return self
        return real_to(self, *args, **kwargs)

    monkeypatch.setattr(Transformer, "to", to)
    return seen


def test_without_a_gpu_the_cpu_path_is_as_before():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert pick_device() == torch.device("cpu")
    assert fast_dtype(pick_device()) == fast_cpu_dtype()  # what the app runs in on a CPU


@pytest.mark.parametrize("capability, dtype", [((9, 0), "bfloat16"), ((8, 0), "bfloat16"), ((7, 5), "float16")])
def test_a_gpu_is_chosen_in_its_fastest_precision(gpu, capability, dtype):
    gpu(capability)
    assert pick_device() == torch.device("cuda")
    assert fast_dtype(pick_device()) == dtype
    assert pick_device("cpu") == torch.device("cpu")  # MODEL_DEVICE=cpu
    assert fast_dtype("cpu") == fast_cpu_dtype()


def test_asking_for_what_is_not_there_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="no CUDA GPU"):
        pick_device("cuda")
    for wrong in ("gpu", "mps"):
        with pytest.raises(ValueError, match="cpu, cuda"):
            pick_device(wrong)


def test_load_puts_the_model_on_the_gpu_in_bfloat16(tiny_model_dir, gpu, moves):
    gpu((8, 6))
    translator = open_model(tiny_model_dir).translator
    assert moves == [torch.device("cuda")]
    assert next(translator.model.parameters()).dtype == torch.bfloat16


def test_load_keeps_an_explicit_device_and_precision(tiny_model_dir, gpu, moves):
    gpu((7, 5))
    assert next(open_model(tiny_model_dir, device="cuda").translator.model.parameters()).dtype == torch.float16
    cpu = open_model(tiny_model_dir, device="cpu").translator  # MODEL_DEVICE=cpu beside a GPU
    assert next(cpu.model.parameters()).dtype == torch.float32
    assert moves == [torch.device("cuda"), torch.device("cpu")]
    assert cpu.translate("I see the cat.") == "io vedo il gatto."
