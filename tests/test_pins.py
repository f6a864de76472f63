"""The project's TensorFlow, found (issue 14, cause 9): without `target-version`, a file's target comes from what its
project pins and from TF1 code in the file, and findings, messages and fixes follow it."""
from __future__ import annotations

import json

import pytest

from test_cli import run_tflint
from tflint.engine import Settings
from tflint.pins import allows, pins_for, pins_for_folder, pins_of_text, tf1_style, unpinned_requirement
from tflint.project import Project


@pytest.mark.parametrize("spec, target", [
    ("tensorflow==1.15", (1, 15)), ("tensorflow-gpu==1.14.0", (1, 14)), ("tensorflow>=2.4,<2.16", (2, 15)),
    ("tensorflow~=2.10.0", (2, 10)), ("tensorflow<2.15.1", (2, 15)), ("tensorflow<=2.12", (2, 12)),
    ("tensorflow>=1.10,<2.0", (1, 15)), ("tensorflow==2.3.0rc1", (2, 3)), ("tensorflow>=2.4", (2, 21)),
    ("tensorflow[and-cuda]==2.14.*", (2, 14)),
])
def test_the_newest_release_the_pin_allows(spec, target):
    assert pins_of_text([("requirements.txt", spec)]).tensorflow == target


def test_pins_in_every_project_file_shape():
    assert pins_of_text([("setup.py", "install_requires=['numpy', 'tensorflow>=2.2,<2.11']")]).tensorflow == (2, 10)
    assert pins_of_text([("environment.yml", "dependencies:\n  - tensorflow-gpu=1.15\n")]).tensorflow == (1, 15)
    poetry = '[tool.poetry.dependencies]\npython = "^3.8"\ntensorflow = "~2.9"\n'
    assert pins_of_text([("pyproject.toml", poetry)]).tensorflow == (2, 9)
    assert pins_of_text([("pyproject.toml", '[project]\ndependencies = ["tensorflow<2.13"]\n')]).tensorflow == (2, 12)


def test_keras_2_from_pins():
    assert pins_of_text([("requirements.txt", "tensorflow\ntf-keras\n")]).keras2
    assert pins_of_text([("requirements.txt", "keras<3\n")]).keras2
    assert pins_of_text([("requirements.txt", "keras==2.15.0\n")]).keras2
    assert pins_of_text([("requirements.txt", "tensorflow<2.16\n")]).keras2  # tf.keras is Keras 2 there
    assert not pins_of_text([("requirements.txt", "tensorflow>=2.16\nkeras>=3\n")]).keras2


def test_keras_3_only_means_tensorflow_2_16_or_newer():
    """TensorFlow 2.16.1's wheel requires keras>=3.0.0 and 2.15.0's keras<2.16 (read from the releases' metadata):
    a project that requires Keras 3 (keras-hub: `keras>=3.15`, TensorFlow unpinned) runs TF 2.16 or newer."""
    pins = pins_of_text([("pyproject.toml", 'dependencies = [\n    "keras>=3.15",\n]\n')])
    assert pins is not None and not pins.keras2 and pins.oldest == (2, 16) and "keras>=3.15" in pins.source
    assert pins_of_text([("requirements.txt", "keras\n")]) is None  # unpinned: nothing known
    assert pins_of_text([("requirements.txt", "keras>=2.4\n")]) is None  # 2.4 to 3.x: nothing known


def test_an_upper_bound_below_keras_2_4_is_multi_backend_keras(tmp_path):
    """bert4keras' setup.py: `keras<=2.3.1`, every release of which is multi-backend Keras, whose `predict` is a
    loop around a cached backend function (no per-call set-up): a file that spells no `tf.keras` runs it, also
    through the project's own module (`from bert4keras.backend import keras`), and TFL301 is silent there."""
    assert pins_of_text([("setup.py", "install_requires=['keras<=2.3.1']")]).keras_version == (2, 3)
    assert pins_of_text([("setup.py", "install_requires=['keras<2.5']")]).keras_version is None
    loop = ("from mypkg.backend import keras\nimport numpy as np\nmodel = keras.models.load_model('m.h5')\n"
            "for x in np.split(np.zeros((8, 2)), 8):\n    y = model.predict(x)\n")
    tf_keras = loop.replace("from mypkg.backend import keras", "from tensorflow import keras")

    def codes(folder, code):
        project = _project(tmp_path / folder, None, code)
        (project / "setup.py").write_text("from setuptools import setup\nsetup(install_requires=['keras<=2.3.1'])\n")
        pins_for_folder.cache_clear()
        return [f["code"] for f in _json(project, "--select", "TFL301", "m.py")]

    assert codes("own-module", loop) == []
    assert codes("tf-keras", tf_keras) == ["TFL301"]  # tf.keras is TensorFlow's own Keras, whatever keras is pinned


def test_tensorflow_addons_means_keras_2():
    """No TensorFlow Addons release supports TensorFlow 2.16 (Keras 3): a project depending on it runs Keras 2."""
    pins = pins_of_text([("requirements.txt", "tqdm==4.62.3\ntensorflow_addons==0.14.0\n")])
    assert pins.keras2 and pins.tensorflow == (2, 15) and "tensorflow-addons==0.14.0" in pins.source
    assert pins_of_text([("requirements.txt", "tensorflow==2.11.0\ntensorflow-addons\n")]).tensorflow == (2, 11)
    assert pins_of_text([("requirements.txt", "tensorflow-addon-extras\n")]) is None


def test_nothing_pinned_is_no_pins():
    assert pins_of_text([("requirements.txt", "numpy\ntensorflow\n")]) is None  # see unpinned_requirement
    assert pins_of_text([("requirements.txt", "# tensorflow==1.15\nnumpy\n")]) is None
    # a package's own setup.py leaves the release to its users; `tensorflow-gpu`'s last release (2.12) refuses to
    # install, so an unpinned one says nothing about what runs
    assert pins_of_text([("setup.py", "install_requires=['numpy', 'tensorflow']")]) is None
    assert pins_of_text([("requirements.txt", "numpy\ntensorflow-gpu\n")]) is None


def test_an_unpinned_tensorflow_requirement_installs_the_newest_release(tmp_path):
    """`pip install -r requirements.txt` with `tensorflow` listed without a version installs the newest release,
    Keras 3 with it (round 22: hunkim/DeepLearningZeroToAll's TF2 labs call `SGD(lr=0.1)`, which Keras 3 rejects).
    Any folder up to the repository root that pins a release wins over it."""
    pins = unpinned_requirement([("requirements.txt", "numpy\ntensorflow\n")])
    assert pins.tensorflow == pins.oldest == (2, 21) and not pins.keras2 and "no version" in pins.source
    assert unpinned_requirement([("requirements/base.txt", "tensorflow-cpu\n")]).tensorflow == (2, 21)
    assert unpinned_requirement([("setup.py", "'tensorflow'"), ("requirements.txt", "tensorflow-gpu\n")]) is None
    (tmp_path / ".git").mkdir()
    (tmp_path / "labs").mkdir()
    (tmp_path / "labs" / "requirements.txt").write_text("numpy\ntensorflow\n")
    pins_for_folder.cache_clear()
    assert pins_for(str(tmp_path / "labs" / "train.py")).tensorflow == (2, 21)
    (tmp_path / "setup.py").write_text("install_requires=['tensorflow>=2.4,<2.11']\n")
    pins_for_folder.cache_clear()
    assert pins_for(str(tmp_path / "labs" / "train.py")).tensorflow == (2, 10)


def test_the_nearest_folder_that_names_tensorflow_up_to_the_repository_root(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("tensorflow==1.15\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "requirements.txt").write_text("sphinx\n")  # names no TensorFlow: look further up
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "setup.py").write_text("setup(install_requires=['tensorflow>=2.8,<2.12'])\n")
    pins_for_folder.cache_clear()
    assert pins_for(str(tmp_path / "docs" / "x.py")).tensorflow == (1, 15)
    assert pins_for(str(tmp_path / "sub" / "m" / "x.py")).tensorflow == (2, 11)
    outside = tmp_path / "repo2"
    (outside / ".git").mkdir(parents=True)
    assert pins_for(str(outside / "x.py")) is None or pins_for(str(outside / "x.py")).tensorflow != (1, 15)


def test_tf1_styles():
    assert tf1_style("import tensorflow as tf\nx = tf.contrib.layers.flatten(y)\n") == "tf1-runtime"
    assert tf1_style("import tensorflow as tf\nsess = tf.Session()\n") == "tf1-runtime"
    assert tf1_style("import tensorflow.compat.v1 as tf\nsess = tf.Session()\n") == "tf1-api"
    assert tf1_style("import tensorflow as tf\ntf.compat.v1.disable_v2_behavior()\n") == "tf1-api"
    assert tf1_style("import tensorflow as tf\nds = tf.data.Dataset.range(3)\n") is None
    # eager mode switched on by hand: TF 1.x (TF 2 has it only as tf.compat.v1.enable_eager_execution)
    assert tf1_style("import tensorflow as tf\ntf.enable_eager_execution()\n") == "tf1-runtime"
    assert tf1_style("import tensorflow as tf\ntf.compat.v1.enable_eager_execution()\n") is None  # a no-op on TF 2


KERAS2_CODE = "import tensorflow as tf\nopt = tf.keras.optimizers.legacy.Adam(1e-3)\n"
TF1_MAP = ("import tensorflow as tf\nx = tf.placeholder(tf.float32)\n"
           "ds = tf.data.TFRecordDataset('a').map(lambda r: tf.io.parse_single_example(r, {}))\n")


def _project(tmp_path, requirements, code, name="m.py", pyproject=None):
    (tmp_path / ".git").mkdir(parents=True, exist_ok=True)
    if requirements is not None:
        (tmp_path / "requirements.txt").write_text(requirements)
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / name).write_text(code)
    return tmp_path


_ALIASES = "[tool.tflint.rules.{rule}]\naliases = true\n"  # report the deprecated aliases that still work


def _json(tmp_path, *args):
    p = run_tflint("check", "--no-cache", "--output-format", "json", *args, cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


def test_keras_2_projects_get_no_keras_3_removals(tmp_path):
    pinned = _project(tmp_path / "a", "tensorflow>=2.9,<2.16\n", KERAS2_CODE)
    unpinned = _project(tmp_path / "b", None, KERAS2_CODE)
    assert _json(unpinned, "--select", "TFL302", "m.py") == []  # which Keras it runs is unknown: silent
    listed = _project(tmp_path / "c", "tensorflow\n", KERAS2_CODE)  # listed without a version: the newest installs
    assert [f["code"] for f in _json(listed, "--select", "TFL302", "m.py")] == ["TFL302"]
    assert _json(pinned, "--select", "TFL302", "m.py") == []
    # `target-version` in the configuration wins over the pins
    (pinned / "pyproject.toml").write_text('[tool.tflint]\ntarget-version = "2.21"\n')
    assert [f["code"] for f in _json(pinned, "--select", "TFL302", "m.py")] == ["TFL302"]


def test_tf1_code_gets_no_tf2_only_names_in_its_fixes(tmp_path):
    """A file that uses TF1-only API (placeholders on plain `tensorflow`) runs on TF 1.x: the fix spells AUTOTUNE
    as TF 1.15 has it."""
    proj = _project(tmp_path, None, TF1_MAP)
    [f] = [f for f in _json(proj, "--select", "TFL101", "m.py")]
    edit = f["fix"]["edits"][0]["content"]
    assert edit == ", num_parallel_calls=tf.data.experimental.AUTOTUNE"
    assert "2.16" not in f["message"]  # no claim about what TF >= 2.16 does by itself


def test_a_pinned_old_release_changes_the_claim(tmp_path):
    """A stateless map on TF >= 2.5 is parallelized by tf.data itself (no finding); on a project pinned to 2.4 it
    runs sequentially, and TFL101 says so."""
    code = "import tensorflow as tf\nds = tf.data.Dataset.range(9).map(lambda x: tf.strings.as_string(x))\n"
    new = _json(_project(tmp_path / "new", None, code), "--select", "TFL101", "m.py")
    old = _json(_project(tmp_path / "old", "tensorflow==2.4.4\n", code), "--select", "TFL101", "m.py")
    assert new == []
    assert [f["code"] for f in old] == ["TFL101"] and "one at a time" in old[0]["message"]


def test_editing_the_pins_invalidates_the_result_cache(tmp_path):
    proj = _project(tmp_path, "tensorflow==2.10\n", KERAS2_CODE)
    env = {"TFLINT_CACHE_DIR": str(tmp_path / "cache")}
    first = run_tflint("check", "--select", "TFL302", "--output-format", "json", "m.py", cwd=proj, env=env)
    assert json.loads(first.stdout) == []
    (proj / "requirements.txt").write_text("tensorflow>=2.16\n")
    second = run_tflint("check", "--select", "TFL302", "--output-format", "json", "m.py", cwd=proj, env=env)
    assert [f["code"] for f in json.loads(second.stdout)] == ["TFL302"]


def test_explicit_target_is_kept_by_every_path(tmp_path):
    (tmp_path / "requirements.txt").write_text("tensorflow==1.15\n")
    settings = Project.load(start=tmp_path, target_version="2.21").settings()
    assert isinstance(settings, Settings)
    t = settings.target_for(str(tmp_path / "m.py"), TF1_MAP)
    assert t.version == (2, 21) and t.source == "target-version"


def test_keras_2_only_modules_make_the_file_keras_2(tmp_path):
    code = ("from keras.engine.topology import Layer\nfrom keras.utils import multi_gpu_model\n"
            "from keras.preprocessing.image import ImageDataGenerator\ngen = ImageDataGenerator(rotation_range=10)\n")
    assert _json(_project(tmp_path / "a", None, code), "--select", "TFL302", "m.py") == []
    plain = "from keras.preprocessing.image import ImageDataGenerator\ngen = ImageDataGenerator(rotation_range=10)\n"
    # without Keras 2 modules the file could be either; a project that pins TF >= 2.16 (Keras 3) gets the finding
    assert [f["code"] for f in _json(_project(tmp_path / "b", "tensorflow>=2.16\n", plain), "--select", "TFL302", "m.py")] == ["TFL302"]


def _notebook(cells) -> str:
    out = []
    for src, output in cells:
        cell = {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": src, "outputs": []}
        if output is not None:
            cell["outputs"] = [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
                                "data": {"text/plain": output}}]
        out.append(cell)
    return json.dumps({"cells": out, "metadata": {}, "nbformat": 4, "nbformat_minor": 4})


FIRST_EDITION = [
    ("import keras\nkeras.__version__", "'2.0.8'"),
    ("from keras import models, layers\nfrom keras.optimizers import RMSprop\n"
     "model = models.Sequential([layers.Dense(1, input_shape=(3,))])\n"
     "model.compile(optimizer=RMSprop(lr=1e-4), loss='mse')\n"
     "for x in xs:\n    model.predict(x)\n", None),
]


def test_the_versions_a_notebook_printed_are_its_target(tmp_path):
    """A textbook's first-edition notebooks ran standalone Keras 2.0.8 (the output of `keras.__version__` says so):
    `lr=` and `model.predict` in a loop are that version's API and graph-mode idiom, not Keras 3 removals or an
    eager-call opportunity. The same notebook without the output is judged against today's Keras."""
    ran = _project(tmp_path / "ran", "tensorflow>=2.16\n", _notebook(FIRST_EDITION), name="nb.ipynb")
    unknown = _project(tmp_path / "unknown", "tensorflow>=2.16\n",
                       _notebook([(FIRST_EDITION[0][0], None), FIRST_EDITION[1]]), name="nb.ipynb")
    assert _json(ran, "--select", "TFL301,TFL302", "nb.ipynb") == []
    assert {f["code"] for f in _json(unknown, "--select", "TFL301,TFL302", "nb.ipynb")} == {"TFL301", "TFL302"}
    pins = pins_for(str(ran / "nb.ipynb"))
    assert pins.keras2 and pins.keras_version == (2, 0) and "notebook output: keras==2.0.8" in pins.source


def test_a_printed_tensorflow_version_is_the_notebooks_target(tmp_path):
    nb = _notebook([("import tensorflow as tf\nprint(tf.__version__)", "1.15.0\n"),
                    ("import tensorflow as tf\nimport keras\nprint(tf.__version__, keras.__version__)", "x 9.9.9")])
    _project(tmp_path, None, nb, name="nb.ipynb")
    pins = pins_for(str(tmp_path / "nb.ipynb"))
    assert pins.tensorflow == (1, 15) and pins.keras2  # the cell naming both versions is ambiguous: not read


def test_a_dockerfile_pins_what_its_image_installs(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "Dockerfile").write_text("FROM ubuntu:20.04\nRUN apt-get update && \\\n"
                                         "    pip3 install --upgrade tensorflow==2.2.0 'numpy<1.19' && echo ok\n")
    (tmp_path / "train.py").write_text("import tensorflow as tf\n")
    pins = pins_for(str(tmp_path / "train.py"))
    assert pins.tensorflow == (2, 2) and pins.source == "Dockerfile: tensorflow==2.2.0"


def test_compat_v1_sessions_spelled_through_plain_tf_are_tf1_code():
    assert tf1_style("import tensorflow as tf\nsess = tf.compat.v1.Session()\n") == "tf1-api"
    assert tf1_style("import tensorflow as tf\nx = tf.compat.v1.placeholder(tf.float32)\n") == "tf1-api"
    assert tf1_style("import tensorflow as tf\nv = tf.compat.v1.losses.mean_squared_error\n") is None


def test_an_output_naming_several_versions_is_not_read(tmp_path):
    """"Running TF-GNN 1.0.2 under TensorFlow 2.15.0": which version is TensorFlow's is not known, so neither is
    taken (a library's version was once read as TensorFlow 1.0.2)."""
    nb = _notebook([("import tensorflow as tf\nimport tensorflow_gnn as tfgnn\n"
                     "print(f'Running TF-GNN {tfgnn.__version__} under TensorFlow {tf.__version__}')",
                     "Running TF-GNN 1.0.2 under TensorFlow 2.15.0.\n")])
    _project(tmp_path, "tensorflow>=2.17\n", nb, name="nb.ipynb")
    assert pins_for(str(tmp_path / "nb.ipynb")).tensorflow == (2, 21)
    nb = _notebook([("import tensorflow as tf\nprint(f'TensorFlow {tf.__version__}.')", "TensorFlow 2.15.0.\n")])
    (tmp_path / "nb.ipynb").write_text(nb)
    assert pins_for(str(tmp_path / "nb.ipynb")).tensorflow == (2, 15)  # a sentence's final period is not a digit


def test_markdown_install_lines_when_the_project_files_name_no_release(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "g3doc" / "setup").mkdir(parents=True)
    (tmp_path / "g3doc" / "setup" / "installation.md").write_text(
        "Install:\n\n```bash\npip install tensorflow==2.6 keras==2.6\n```\n")
    (tmp_path / "requirements.txt").write_text("numpy\ntensorflow\n")
    (tmp_path / "src").mkdir()
    pins_for_folder.cache_clear()
    found = pins_for(str(tmp_path / "src" / "train.py"))
    assert found.tensorflow == (2, 6) and found.keras2
    # a project file that names a release wins over its Markdown
    (tmp_path / "requirements.txt").write_text("tensorflow==2.12\n")
    pins_for_folder.cache_clear()
    assert pins_for(str(tmp_path / "src" / "train.py")).tensorflow == (2, 12)


def test_markdown_that_disagrees_with_itself_says_nothing(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "README.md").write_text("TF1: `pip install tensorflow==1.15`\n\nTF2: `pip install tensorflow==2.4`\n")
    pins_for_folder.cache_clear()
    assert pins_for(str(tmp_path / "train.py")) is None


def test_removed_keras_api_needs_the_project_to_run_keras_3(tmp_path):
    """TFL302 claims code breaks on Keras 3: with nothing pinned and no Keras 3 API in the file, which Keras the
    project runs is unknown, and the rule is silent; a pin of TF >= 2.16 or Keras 3 API in the file establish it."""
    (tmp_path / ".git").mkdir()  # the search for pins ends here (not at the test session's own pins)
    src = "import tensorflow as tf\nflip = tf.keras.layers.experimental.preprocessing.RandomFlip()\n"
    (tmp_path / "a.py").write_text(src)
    (tmp_path / "b.py").write_text(src + "y = tf.keras.ops.add(1, 2)\n")

    def codes(name):
        p = run_tflint("check", "--no-cache", "--select", "TFL302", "--output-format", "json", name, cwd=tmp_path)
        return [f["code"] for f in json.loads(p.stdout)]

    assert codes("a.py") == []
    assert codes("b.py") == ["TFL302"]
    # a lower bound alone (`tensorflow>=1.15`, NSL's install doc) still allows Keras 2: not established
    (tmp_path / "requirements.txt").write_text("tensorflow>=1.15.0\n")
    pins_for_folder.cache_clear()
    assert codes("a.py") == []
    # ... but what breaks across the whole range is still reported: `lr=` is ignored from Keras 2.11 on
    (tmp_path / "c.py").write_text("import tensorflow as tf\nopt = tf.keras.optimizers.Adam(lr=0.01)\n")
    assert codes("c.py") == ["TFL302"]
    (tmp_path / "requirements.txt").write_text("tensorflow>=2.16\n")
    pins_for_folder.cache_clear()
    assert codes("a.py") == ["TFL302"]


def test_a_watermark_cell_says_what_the_notebook_ran(tmp_path):
    from tflint.pins import notebook_versions

    nb = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": 1,
                     "source": "%load_ext watermark\n%watermark -a 'x' -u -d -p numpy,tensorflow",
                     "outputs": [{"output_type": "stream", "name": "stdout",
                                  "text": "x \nlast updated: 2019-12-01 \n\nnumpy 1.17.4\ntensorflow 2.0.0\n"}]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    (tmp_path / "ch13.ipynb").write_text(json.dumps(nb))
    found = notebook_versions(str(tmp_path / "ch13.ipynb"))
    assert found.tensorflow == (2, 0) and found.keras2


def test_colab_tensorflow_version_magic_pins_tf1(tmp_path):
    """`%tensorflow_version 1.x` made Colab run TF 1.15 (with standalone Keras on graph mode): a TF1 target."""
    from tflint.pins import notebook_versions

    cells = [{"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [],
              "source": "%tensorflow_version 1.x\nimport keras"}]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    (tmp_path / "unet.ipynb").write_text(json.dumps(nb))
    assert notebook_versions(str(tmp_path / "unet.ipynb")).tensorflow == (1, 15)
    cells[0]["source"] = "%tensorflow_version 2.x\nimport tensorflow as tf"
    (tmp_path / "two.ipynb").write_text(json.dumps(nb))
    assert notebook_versions(str(tmp_path / "two.ipynb")) is None


def test_google_cloud_images_name_their_release(tmp_path):
    """Deep Learning VM / Vertex AI prebuilt images (`tf2-gpu.2-3`, `tf-cpu.2-1`) and a notebook saved on one
    (metadata `environment`: `tf22-cpu.2-2`) run that TensorFlow."""
    from tflint.pins import notebook_versions, pip_installs

    assert pip_installs("FROM gcr.io/deeplearning-platform-release/tf2-gpu.2-3\n") == "tensorflow==2.3"
    assert pip_installs("--executor-image-uri=us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-1:latest") == \
        "tensorflow==2.1"
    assert pip_installs("FROM python:3.8-slim\n") == ""
    nb = {"cells": [], "nbformat": 4, "nbformat_minor": 4,
          "metadata": {"environment": {"name": "tf22-cpu.2-2", "type": "gcloud",
                                       "uri": "gcr.io/deeplearning-platform-release/tf2-cpu.2-2:m47"}}}
    (tmp_path / "jigsaw.ipynb").write_text(json.dumps(nb))
    assert notebook_versions(str(tmp_path / "jigsaw.ipynb")).tensorflow == (2, 2)


def test_untracked_variable_claims_need_keras_3_established(tmp_path):
    code = ("import tensorflow as tf\n\nclass Dense(tf.keras.layers.Layer):\n"
            "    def build(self, shape):\n        self.w = tf.Variable(tf.zeros([shape[-1], 4]))\n")
    assert _json(_project(tmp_path / "a", None, code), "--select", "TFL304", "m.py") == []
    got = _json(_project(tmp_path / "b", "tensorflow>=2.16\n", code), "--select", "TFL304", "m.py")
    assert [f["code"] for f in got] == ["TFL304"]


def test_files_that_disagree_take_requirements_txt():
    texts = [("conda-cpu.yml", "dependencies:\n  - tensorflow==2.1.0rc1\n"),
             ("requirements-gpu.txt", "tensorflow-gpu==2.12.0\n"), ("requirements.txt", "tensorflow==2.11.1\n")]
    found = pins_of_text(texts)
    assert found.tensorflow == (2, 11) and "other files disagree" in found.source


def test_tensorflow_docker_images_pin_the_release(tmp_path):
    """A README or Dockerfile that runs TensorFlow's own image (`docker image tensorflow/tensorflow:2.4.0-gpu`,
    `FROM tensorflow/tensorflow:1.15.2-gpu-py3`) says which TensorFlow the project runs; `latest` says nothing."""
    from tflint.pins import pip_installs

    assert pip_installs("- docker image tensorflow/tensorflow:2.4.0-gpu\n").splitlines() == ["tensorflow==2.4.0"]
    assert pip_installs("FROM tensorflow/tensorflow:1.15.2-gpu-py3\n").splitlines() == ["tensorflow==1.15.2"]
    assert pip_installs("FROM tensorflow/tensorflow:latest-gpu\n") == ""
    (tmp_path / ".git").mkdir()
    (tmp_path / "README.md").write_text("Run in the docker image tensorflow/tensorflow:2.4.0-gpu.\n")
    pins_for_folder.cache_clear()
    found = pins_for_folder(tmp_path)
    assert found is not None and found.tensorflow == (2, 4) and found.keras2


def test_a_rename_needs_the_new_name_in_every_supported_release(tmp_path):
    """`tensorflow>=2.4.0` (acme) supports 2.4: `tf.data.Dataset.sample_from_datasets` (new in 2.7) would break it
    there, so the deprecated `tf.data.experimental.sample_from_datasets` is not reported; a floor of 2.7 allows it.
    Fixes spell AUTOTUNE the way the oldest supported release has it."""
    (tmp_path / ".git").mkdir()
    code = ("import tensorflow as tf\n"
            "ds = tf.data.experimental.sample_from_datasets([a, b], weights=[0.5, 0.5])\n")
    (tmp_path / "m.py").write_text(code)

    def codes(*args):
        p = run_tflint("check", "--no-cache", "--select", "TFL110", "--output-format", "json", *args, "m.py",
                       cwd=tmp_path)
        return [f["code"] for f in json.loads(p.stdout)]

    (tmp_path / "requirements.txt").write_text("tensorflow>=2.4.0\n")
    pins_for_folder.cache_clear()
    assert codes() == []
    (tmp_path / "requirements.txt").write_text("tensorflow>=2.7\n")
    pins_for_folder.cache_clear()
    assert codes() == ["TFL110"]
    (tmp_path / "requirements.txt").write_text("tensorflow>=2.2,<2.5\n")
    pins_for_folder.cache_clear()
    (tmp_path / "m.py").write_text("import tensorflow as tf\n"
                                   "ds = tf.data.TFRecordDataset(['a']).map(lambda x: tf.io.parse_tensor(x, tf.float32))\n"
                                   "model.fit(ds)\n")
    p = run_tflint("check", "--no-cache", "--select", "TFL101", "--output-format", "json", "m.py", cwd=tmp_path)
    fixes = [f["fix"]["message"] for f in json.loads(p.stdout) if f.get("fix")]
    assert fixes and all("experimental.AUTOTUNE" in m for m in fixes), fixes


def test_the_files_own_api_raises_the_oldest_release(tmp_path):
    """`tensorflow>=1.15` says 1.15, but a file that calls `distribute_datasets_from_function` (new in 2.4) runs on
    2.4 at least: there the rename to `tf.distribute.TPUStrategy` (2.3) is safe (asked for with `aliases = true`). A
    file without such evidence keeps the pins' lower bound and gets no rename."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("tensorflow>=1.15\n")
    (tmp_path / "pyproject.toml").write_text(_ALIASES.format(rule="deprecated-distribute-api"))
    head = "import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy(resolver)\n"
    (tmp_path / "a.py").write_text(head + "ds = strategy.distribute_datasets_from_function(make)\n")
    (tmp_path / "b.py").write_text(head)
    pins_for_folder.cache_clear()
    p = run_tflint("check", "--no-cache", "--select", "TFL504", "--output-format", "json", "a.py", "b.py", cwd=tmp_path)
    assert [(f["filename"], f["code"]) for f in json.loads(p.stdout)] == [("a.py", "TFL504")]


def test_nvidia_ngc_images_stand_for_the_release_of_their_month():
    """`nvcr.io/nvidia/tensorflow:21.02-tf2-py3` (NVIDIA's DeepLearningExamples pin their models this way) holds
    the TF 2 of February 2021: 2.4 was the newest then (PyPI upload months), 2.3 the one before; Keras 2."""
    from tflint.pins import pins_of_text, pip_installs

    got = pins_of_text([("Dockerfile", pip_installs("ARG FROM_IMAGE_NAME=nvcr.io/nvidia/tensorflow:21.02-tf2-py3\n"))])
    assert (got.tensorflow, got.oldest, got.keras2) == ((2, 4), (2, 3), True)
    assert pip_installs("FROM nvcr.io/nvidia/tensorflow:19.10-tf1-py3") == "tensorflow==1.15"
    assert pip_installs("FROM nvcr.io/nvidia/pytorch:21.02-py3") == ""
    assert pip_installs("FROM nvcr.io/nvidia/merlin/merlin-tensorflow-training:22.03") == "tensorflow>=2.7,<2.9"


@pytest.mark.parametrize("text, expected", [
    ("gcloud alpha compute tpus tpu-vm create n --version=v2-alpha --image-family=tf-2-3-1 \\", "tensorflow==2.3"),
    ("--image-family=tf2-2-3-cu110", "tensorflow==2.3"),
    ("--image-family=tf-1-15-cpu", "tensorflow==1.15"),
    ("--image-family=tf-latest-gpu", ""),  # the newest: no release named
    ("gcloud ai-platform jobs submit training j --runtime-version 1.15 --python-version 3.7", "tensorflow==1.15"),
    ("ctpu up --tf-version=1.14", "tensorflow==1.14"),
    ("gcloud compute tpus create x --version=2.4.0", "tensorflow==2.4"),
    ("gcloud compute tpus tpu-vm create x --version=tpu-vm-tf-2.9.1", "tensorflow==2.9"),
    ("python --version 3.7", ""),  # a version flag with no TPU on its line is not TensorFlow's
])
def test_google_cloud_images_and_runtimes_name_their_release(text, expected):
    from tflint.pins import pip_installs

    assert pip_installs(text) == expected


def test_renaming_a_working_alias_needs_a_known_release(tmp_path):
    """`tf.distribute.experimental.MultiWorkerMirroredStrategy` still works on TF 2.21; its stable name exists from
    2.4. Unpinned, the project may run 2.1 (Vertex's `tf-cpu.2-1` image): no rename. Pinned, or using 2.4 API
    already, it is advice. A removed API (`experimental_run_v2`) is reported either way."""
    alias = "import tensorflow as tf\nstrategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()\n"
    removed = "import tensorflow as tf\nstrategy = tf.distribute.MirroredStrategy()\nstrategy.experimental_run_v2(f)\n"
    evidence = alias + "ds = strategy.distribute_datasets_from_function(make)\n"

    def codes(folder, reqs, code, opted=True):
        options = _ALIASES.format(rule="TFL504") if opted else None  # by code or by name: the same table
        return [f["code"] for f in _json(_project(tmp_path / folder, reqs, code, pyproject=options),
                                         "--select", "TFL504", "m.py")]

    assert codes("unpinned", None, alias) == []
    assert codes("pinned", "tensorflow>=2.6\n", alias) == ["TFL504"]
    assert codes("old", "tensorflow==2.1.0\n", alias) == []
    assert codes("evidence", None, evidence) == ["TFL504"]
    assert codes("removed", None, removed) == ["TFL504"]
    # by default a working alias is not reported even where the release is known: it runs the same code
    assert codes("pinned-default", "tensorflow>=2.6\n", alias, opted=False) == []
    assert codes("evidence-default", None, evidence, opted=False) == []
    assert codes("removed-default", None, removed, opted=False) == ["TFL504"]


def test_deprecated_data_names_that_still_work_need_a_known_release(tmp_path):
    """`from_generator(output_types=...)` still works on TF 2.21: it is renamed to `output_signature=` (new in 2.4)
    only where the project is known to run 2.4 or later; a course updated to TF 2.3, unpinned, is left alone."""
    code = ("import tensorflow as tf\n\ndef gen():\n    yield 1\n\n"
            "ds = tf.data.Dataset.from_generator(gen, output_types=tf.int64)\n")

    def codes(folder, reqs, opted=True):
        options = _ALIASES.format(rule="deprecated-data-api") if opted else None
        return sorted(f["code"] for f in _json(_project(tmp_path / folder, reqs, code, pyproject=options),
                                               "--select", "TFL110", "m.py"))

    assert codes("unpinned", None) == []
    assert codes("pinned", "tensorflow>=2.6\n") == ["TFL110"]
    assert codes("old", "tensorflow==2.3.0\n") == []  # output_signature is new in 2.4
    assert codes("pinned-default", "tensorflow>=2.6\n", opted=False) == []  # not asked for


def test_deprecated_function_keywords_that_still_work_need_a_known_release(tmp_path):
    """`tf.function(experimental_compile=True)` still compiles with XLA on TF 2.21; `jit_compile` is new in 2.5. An
    unpinned project (bigbird: Colab notebooks of TF 2.3/2.4) is left alone; a pinned one gets the rename."""
    code = "import tensorflow as tf\n\n@tf.function(experimental_compile=True)\ndef f(x):\n    return x\n"

    def codes(folder, reqs):
        return [f["code"] for f in _json(_project(tmp_path / folder, reqs, code), "--select", "TFL210", "m.py")]

    assert codes("unpinned", None) == []
    assert codes("pinned", "tensorflow>=2.6\n") == ["TFL210"]
    assert codes("old", "tensorflow==2.4.0\n") == []


def test_a_notebook_that_installs_its_tensorflow_runs_it(tmp_path):
    """`!pip install -q tensorflow==2.3.0` in a cell, or `!pip install tf-nightly` (the newest release or later)."""
    from tflint.pins import TODAY, notebook_versions

    def nb(src):
        return {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [], "source": src}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 4}

    (tmp_path / "a.ipynb").write_text(json.dumps(nb("!pip install -q tensorflow==2.3.0 tensorflow-datasets\nimport tensorflow as tf")))
    assert notebook_versions(str(tmp_path / "a.ipynb")).tensorflow == (2, 3)
    (tmp_path / "b.ipynb").write_text(json.dumps(nb("!pip install tf-nightly\nimport tensorflow as tf")))
    assert notebook_versions(str(tmp_path / "b.ipynb")).tensorflow == TODAY
    (tmp_path / "c.ipynb").write_text(json.dumps(nb("!pip install tensorflow-datasets\nimport tensorflow as tf")))
    assert notebook_versions(str(tmp_path / "c.ipynb")) is None


def test_a_notebook_that_names_its_release_in_words(tmp_path):
    """`# Tested with TensorFlow 2.1.0` in a code cell, or a markdown cell that requires a release, is the notebook's
    target when nothing it printed or installed says otherwise (tensorflow/workshops' AMLD exercises)."""
    from tflint.pins import notebook_versions

    def nb(*cells):
        return {"cells": [{"cell_type": kind, "metadata": {}, "source": src, **({"execution_count": 1, "outputs": []}
                                                                                 if kind == "code" else {})}
                          for kind, src in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}

    (tmp_path / "a.ipynb").write_text(json.dumps(nb(("code", "import tensorflow as tf\n# Tested with TensorFlow 2.1.0\n"))))
    assert notebook_versions(str(tmp_path / "a.ipynb")).tensorflow == (2, 1)
    (tmp_path / "b.ipynb").write_text(json.dumps(nb(("markdown", "This notebook requires TensorFlow 2.4 or later."),
                                                    ("code", "import tensorflow as tf"))))
    assert notebook_versions(str(tmp_path / "b.ipynb")).oldest == (2, 4)
    (tmp_path / "c.ipynb").write_text(json.dumps(nb(("code", "!pip install -q tensorflow==2.3.0\n# Tested with TensorFlow 2.1.0"))))
    assert notebook_versions(str(tmp_path / "c.ipynb")).tensorflow == (2, 3)  # what it installs wins
    (tmp_path / "d.ipynb").write_text(json.dumps(nb(("code", "x = 'tested with TensorFlow 2.1.0'  # a string, not a comment"))))
    assert notebook_versions(str(tmp_path / "d.ipynb")) is None


def test_a_readme_that_names_its_release_in_words(tmp_path):
    """xlnet's README says only "tested with TensorFlow 1.13.1": that is the project's release (its serial
    `map(parser)` then runs without tf.data's automatic map parallelization, which came in 2.5)."""
    from tflint.pins import prose_pins

    assert prose_pins("this code base has been tested with TensorFlow 1.13.1 under Python2.") == "tensorflow==1.13.1"
    assert prose_pins("Requires **TensorFlow 2.4** or later.") == "tensorflow>=2.4"
    assert prose_pins("A TensorFlow checkpoint, tested with care; TensorFlow 2 or later.") == ""
    code = ("import tensorflow as tf\n\ndef parser(x):\n    return tf.io.parse_single_example(x, {})\n\n"
            "ds = tf.data.TFRecordDataset(['a']).map(parser)\n"
            "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmodel.fit(ds.batch(8), epochs=10)\n")
    project = _project(tmp_path / "prose", None, code)
    (project / "README.md").write_text("# Model\n\nThis code base has been tested with TensorFlow 1.13.1.\n")
    pins_for_folder.cache_clear()
    got = _json(project, "--select", "TFL101", "m.py")
    assert [f["code"] for f in got] == ["TFL101"]
    (project / "README.md").write_text("# Model\n\nTrained with TensorFlow.\n")
    pins_for_folder.cache_clear()
    assert _json(project, "--select", "TFL101", "m.py") == []


def test_a_readme_narrows_an_open_range(tmp_path):
    """keras-rl2: setup.py says `tensorflow>=2.1.0`, the README "Requires tensorflow==2.1.0": the project runs 2.1,
    where `Adam(lr=...)` works (two TFL302 findings judged false in round 18). A README outside the range, or none,
    leaves the range as it is."""
    code = "import tensorflow as tf\nopt = tf.keras.optimizers.Adam(lr=0.01)\n"

    def codes(folder, readme):
        project = _project(tmp_path / folder, None, code)
        (project / "setup.py").write_text("from setuptools import setup\nsetup(install_requires=['tensorflow>=2.1.0'])\n")
        if readme is not None:
            (project / "README.md").write_text(readme)
        pins_for_folder.cache_clear()
        return [f["code"] for f in _json(project, "--select", "TFL302", "m.py")]

    assert codes("narrowed", "# keras-rl2\n\n### NOTE: Requires tensorflow==2.1.0\n") == []
    assert codes("open", None) == ["TFL302"]
    assert codes("outside", "Requires tensorflow==1.15\n") == ["TFL302"]


def test_using_tensorflow_backend_in_an_output_is_multi_backend_keras(tmp_path):
    """Multi-backend Keras (2.0-2.3) prints "Using TensorFlow backend." on import; a notebook whose output holds it
    ran that Keras, whose `predict` has no per-call set-up (Coursera's notebooks: a TFL301 judged false in round 18).
    The same notebook without the output is judged against today's Keras."""
    loop = ("from keras.models import Sequential\nfrom keras.layers import Dense\n"
            "model = Sequential([Dense(1, input_shape=(3,))])\nfor x in xs:\n    model.predict(x)\n")
    ran = _project(tmp_path / "ran", None, _notebook([("import keras", "Using TensorFlow backend.\n"), (loop, None)]),
                   name="nb.ipynb")
    unknown = _project(tmp_path / "unknown", None, _notebook([("import keras", None), (loop, None)]), name="nb.ipynb")
    assert _json(ran, "--select", "TFL301", "nb.ipynb") == []
    assert [f["code"] for f in _json(unknown, "--select", "TFL301", "nb.ipynb")] == ["TFL301"]
    assert pins_for(str(ran / "nb.ipynb")).keras_version == (2, 3)


def test_a_readme_requirements_list_item(tmp_path):
    """calmisential/TensorFlow2.0_ResNet's README lists `+ Tensorflow == 2.0.0` under its requirements and pins
    nothing else (round 19: its serial JPEG-decoding map went unreported). A list item that is a requirement and
    nothing else counts; an item that mentions TensorFlow in a sentence does not."""
    from tflint.pins import prose_pins

    assert prose_pins("## Requirements\n+ Python >= 3.6\n+ Tensorflow == 2.0.0\n") == "tensorflow==2.0.0"
    assert prose_pins("- `tensorflow-gpu>=1.13`\n") == "tensorflow>=1.13"
    assert prose_pins("* TensorFlow 1.15\n") == "tensorflow==1.15"
    assert prose_pins("- TensorFlow 2.0 makes this easy\n- tensorflow\n") == ""
    # a Google Cloud notebook image named by its release (practical-ml-vision-book); "2.7+" is a floor, not a pin
    assert prose_pins("Then, select TensorFlow Enterprise 2.6 with Tesla T4.") == "tensorflow==2.6"
    assert prose_pins("create a Workbench instance with TensorFlow Enterprise 2.7+ (not 2.6)") == ""


def test_the_runtime_a_folder_submits_its_trainer_to(tmp_path):
    """tf-estimator-tutorials: a trainer package pins nothing; the notebook beside it submits it with `gcloud
    ml-engine jobs submit training ... --runtime-version=1.4` (round 19: `num_parallel_reads` was advised on
    `TextLineDataset`, which TF 1.4 does not have). The runtime a folder's notebook, shell script or job config
    names is the release the code below it runs on."""
    code = ("import tensorflow as tf\n\ndef input_fn(pattern):\n"
            "    return tf.data.TextLineDataset(tf.gfile.Glob(pattern + '*.csv')).batch(8)\n")
    project = _project(tmp_path / "nb", None, "")
    (project / "trainer").mkdir()
    (project / "trainer" / "model.py").write_text(code)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["%%bash\n", "gcloud ml-engine jobs submit training job1 \\\n", "  --runtime-version=1.4 \\\n",
                       "  --module-name=trainer.task\n"]}
    (project / "submit.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                                      "nbformat_minor": 2}))
    pins_for_folder.cache_clear()
    assert pins_for(str(project / "trainer" / "model.py")).tensorflow == (1, 4)
    got = _json(project, "--select", "TFL109", "trainer/model.py")
    assert [f["code"] for f in got] == ["TFL109"] and "no `num_parallel_reads`" in got[0]["message"]

    yaml_project = _project(tmp_path / "yaml", None, "")
    (yaml_project / "trainer").mkdir()
    (yaml_project / "trainer" / "model.py").write_text(code)
    (yaml_project / "config.yaml").write_text("trainingInput:\n  scaleTier: BASIC\n  runtimeVersion: '1.12'\n")
    pins_for_folder.cache_clear()
    assert pins_for(str(yaml_project / "trainer" / "model.py")).tensorflow == (1, 12)
    (yaml_project / "config.yaml").write_text("trainingInput:\n  scaleTier: BASIC\n")
    pins_for_folder.cache_clear()
    assert pins_for(str(yaml_project / "trainer" / "model.py")) is None


def test_a_readme_environment_line_wins_over_an_unpinned_requirement(tmp_path):
    """yu4u/age-gender-estimation lists `tensorflow` with no version in requirements.txt and documents its
    environment as "Ubuntu 16.04, Python 3.6.9, Tensorflow 2.3.0, CUDA 10.01, cuDNN 7.6": the project's own word is
    TF 2.3, so its Keras 2 `Adam(lr=...)` is not reported as broken on Keras 3. A sentence without a Python release
    beside it is no environment line."""
    from tflint.pins import prose_pins

    assert prose_pins("- Ubuntu 16.04, Python 3.6.9, Tensorflow 2.3.0, CUDA 10.01, cuDNN 7.6") == "tensorflow==2.3.0"
    assert prose_pins("* python 3.6, tensorflow-gpu 1.13.1; keras 2.2.4") == "tensorflow==1.13.1"
    assert prose_pins("We use TensorFlow 2.3 for the experiments.") == ""
    assert prose_pins("python3.7 tensorflow1.13") == "tensorflow==1.13"  # Stick-To's README, no spaces
    assert prose_pins("Python 3.8 and TensorFlow2 are needed") == ""
    code = "import tensorflow as tf\nopt = tf.keras.optimizers.Adam(lr=0.01)\n"
    project = _project(tmp_path / "env", "numpy\ntensorflow\n", code)
    (project / "README.md").write_text("## Dependencies\n- Ubuntu 16.04, Python 3.6.9, Tensorflow 2.3.0, CUDA 10.01\n")
    pins_for_folder.cache_clear()
    assert _json(project, "--select", "TFL302", "m.py") == []
    (project / "README.md").write_text("## Dependencies\nSee requirements.txt.\n")
    pins_for_folder.cache_clear()
    assert [f["code"] for f in _json(project, "--select", "TFL302", "m.py")] == ["TFL302"]


def test_a_notebook_that_never_ran_takes_what_its_folders_notebooks_ran(tmp_path):
    """An unpinned book chapter: the notebooks that ran printed 'Using TensorFlow backend.' (multi-backend Keras
    before 2.4); the one that never ran runs that Keras too. A sibling that printed a TensorFlow version, or a pin,
    leaves it as it was."""
    from tflint.pins import pins_for, pins_for_folder

    def nb(src, out=None):
        outputs = [{"output_type": "stream", "name": "stderr", "text": [out]}] if out else []
        return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": outputs,
                                      "source": src}], "metadata": {}, "nbformat": 4, "nbformat_minor": 4})

    ch = tmp_path / "book" / "ch08"
    ch.mkdir(parents=True)
    (tmp_path / "book" / ".git").mkdir()
    (ch / "Modeling.ipynb").write_text(nb("import keras\nfrom keras.models import Sequential", "Using TensorFlow backend.\n"))
    (ch / "Features.ipynb").write_text(nb("import keras\nfrom keras.applications import vgg16"))
    pins_for_folder.cache_clear()
    p = pins_for(str(ch / "Features.ipynb"))
    assert p is not None and p.keras_version is not None and p.keras_version < (2, 4)
    (ch / "Other.ipynb").write_text(nb("import tensorflow as tf\nprint(tf.__version__)", "2.3.0\n"))
    pins_for_folder.cache_clear()
    p = pins_for(str(ch / "Features.ipynb"))
    assert p is not None and p.tensorflow == (2, 3) and p.keras_version is None  # a printed release wins


def test_a_notebook_that_never_ran_takes_the_releases_its_books_other_chapters_printed(tmp_path):
    """lmoroney/tfbook: chapter4's notebooks print nothing, chapter9 and chapter11 printed 2.1.0 and 2.2.0: the
    book ran TF 2.1-2.2. Releases of different eras say nothing; a repository's root is as far up as it looks."""
    from tflint.pins import pins_for, pins_for_folder

    def nb(src, out=None):
        outputs = [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
                    "data": {"text/plain": [out]}}] if out else []
        return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": outputs,
                                      "source": src}], "metadata": {}, "nbformat": 4, "nbformat_minor": 4})

    book = tmp_path / "book"
    for ch in ("chapter4", "chapter9", "chapter11"):
        (book / ch).mkdir(parents=True)
    (book / "README.md").write_text("A book.\n")
    (book / ".git").mkdir()
    (book / "chapter4" / "datasets.ipynb").write_text(nb("import tensorflow as tf\nds = tf.data.Dataset.range(3)"))
    (book / "chapter9" / "a.ipynb").write_text(nb("import tensorflow as tf\ntf.__version__", "'2.1.0'"))
    (book / "chapter11" / "b.ipynb").write_text(nb("import tensorflow as tf\ntf.__version__", "'2.2.0'"))
    pins_for_folder.cache_clear()
    p = pins_for(str(book / "chapter4" / "datasets.ipynb"))
    assert p is not None and (p.oldest, p.tensorflow) == ((2, 1), (2, 2))
    (book / "chapter11" / "b.ipynb").write_text(nb("import tensorflow as tf\ntf.__version__", "'1.15.0'"))
    pins_for_folder.cache_clear()
    assert pins_for(str(book / "chapter4" / "datasets.ipynb")) is None  # 1.15 beside 2.1: no one era
    (book / "top.ipynb").write_text(nb("import tensorflow as tf"))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "c.ipynb").write_text(nb("import tensorflow as tf\ntf.__version__", "'2.3.0'"))
    pins_for_folder.cache_clear()
    assert pins_for(str(book / "top.ipynb")) is None  # the root's README: other projects' notebooks are not read


def test_a_files_header_names_what_it_was_written_for(tmp_path):
    """pythonlessons/Reinforcement_Learning: `# Tutorial written for - Tensorflow 1.15, Keras 2.2.4` heads the original
    scripts, `# Tutorial written for - Tensorflow 2.3.1` their `_TF2` copies, under one requirements.txt pinning 2.3.1
    for the copies. The file's own header is its target; a line far below the header is not."""
    from tflint.pins import HEADER_LINES, header_pins

    p = header_pins("# Tutorial by www.pylessons.com\n# Tutorial written for - Tensorflow 1.15, Keras 2.2.4\nimport os\n")
    assert p is not None and p.tensorflow == (1, 15) and p.keras_version == (2, 2)
    assert header_pins("# Tutorial written for - Tensorflow 2.3.1\nimport tensorflow as tf\n").tensorflow == (2, 3)
    assert header_pins('"""Tested with TensorFlow 1.13.1."""\nimport tensorflow as tf\n').tensorflow == (1, 13)
    assert header_pins("import tensorflow as tf\n") is None
    assert header_pins("\n" * HEADER_LINES + "# written for TensorFlow 1.15\n") is None
    code = ("# Tutorial written for - Tensorflow 1.15, Keras 2.2.4\nfrom keras.models import Sequential\n"
            "model = Sequential()\nfor s in states:\n    q = model.predict(s)\n")
    project = _project(tmp_path / "hdr", "tensorflow==2.3.1\n", code)
    pins_for_folder.cache_clear()
    assert _json(project, "--select", "TFL301", "m.py") == []  # multi-backend Keras 2.2.4: predict is cheap there
    (project / "m.py").write_text(code.replace("Tensorflow 1.15, Keras 2.2.4", "Tensorflow 2.3.1"))
    assert [f["code"] for f in _json(project, "--select", "TFL301", "m.py")] == ["TFL301"]


def test_a_file_using_tf_estimator_runs_tensorflow_2_15_or_older(tmp_path):
    """`tf.estimator` left with TF 2.16 (tensorflow-estimator's last release is 2.15.0; TF 2.16.1 requires keras>=3 and
    no estimator): on an unpinned project a file that uses it runs 2.15 with Keras 2, where `fit_generator` is valid
    (TensorFlow's migration guides: TFL302 findings judged false). A file without it keeps the newest release."""
    code = "import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmodel.fit_generator(g(), epochs=3)\n"
    project = _project(tmp_path / "est", "tensorflow\n", code)
    pins_for_folder.cache_clear()
    assert [f["code"] for f in _json(project, "--select", "TFL302", "m.py")] == ["TFL302"]
    (project / "m.py").write_text(code + "est = tf.estimator.DNNClassifier(hidden_units=[8], feature_columns=[])\n")
    assert _json(project, "--select", "TFL302", "m.py") == []


def test_a_siblings_pip_install_is_not_its_folders_release(tmp_path):
    """A hub tutorial's `!pip install "tensorflow<2.9.0"` is for its own kernel: the notebooks beside it that print
    nothing are not taken to run 2.8 (2 TFL102 findings judged false)."""
    from tflint.pins import pins_for

    def nb(src):
        return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [],
                                      "source": src}], "metadata": {}, "nbformat": 4, "nbformat_minor": 4})

    hub = tmp_path / "site" / "hub"
    hub.mkdir(parents=True)
    (tmp_path / "site" / ".git").mkdir()
    (hub / "on_device.ipynb").write_text(nb('!pip install "tensorflow<2.9.0"\nimport tensorflow as tf'))
    (hub / "retraining.ipynb").write_text(nb("import tensorflow as tf\nds = tf.data.Dataset.range(3)"))
    pins_for_folder.cache_clear()
    assert pins_for(str(hub / "on_device.ipynb")).tensorflow == (2, 8)
    assert pins_for(str(hub / "retraining.ipynb")) is None


def test_a_recipe_two_folders_down_takes_what_the_books_chapters_printed(tmp_path):
    """A cookbook: `ch8/03_cifar/x.ipynb` prints nothing, `ch1` and `ch2` printed 2.2.0, `ch3` printed Keras 2.4.3 only
    (tf.keras of that era, no TensorFlow release of its own): the recipe runs TF 2.2 (two round-28 TFL102 misses)."""
    from tflint.pins import pins_for

    def nb(src, out=None):
        outputs = [{"output_type": "stream", "name": "stdout", "text": [out]}] if out else []
        return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": outputs,
                                      "source": src}], "metadata": {}, "nbformat": 4, "nbformat_minor": 4})

    book = tmp_path / "cookbook"
    (book / ".git").mkdir(parents=True)
    for ch, out, what in (("ch1", "2.2.0\n", "tf"), ("ch2", "2.2.0\n", "tf"), ("ch3", "2.4.3\n", "keras")):
        (book / ch).mkdir()
        (book / ch / "a.ipynb").write_text(nb(f"import tensorflow as tf\nimport keras\nprint({what}.__version__)", out))
    (book / "ch8" / "03_cifar").mkdir(parents=True)
    (book / "ch8" / "readme.md").write_text("Chapter 8\n")
    (book / "ch8" / "03_cifar" / "x.ipynb").write_text(nb("import tensorflow as tf"))
    pins_for_folder.cache_clear()
    p = pins_for(str(book / "ch8" / "03_cifar" / "x.ipynb"))
    assert p is not None and p.tensorflow == (2, 2)
