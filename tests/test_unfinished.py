"""Syntax errors that are not mistakes (tflint.unfinished): Python 2 files and cells, exercise blanks, a Colab cell
magic after comments, an empty .ipynb. Left out without a TFL001; a real syntax error next to them is reported."""
from __future__ import annotations

import json

import pytest

from test_notebook import findings, nb_json
from tflint.api import check_source, default_settings
from tflint.unfinished import exercise_blank, not_a_mistake, python2_source


def tfl001(text: str, path: str = "m.py") -> list:
    return list(check_source(text, path, default_settings(select=["TFL001"])))


@pytest.mark.parametrize("line", [
    "print x", "    print 'loss', loss", "print >>sys.stderr, 'x'", "except ValueError, e:", 'exec "x = 1"',
    "raise ValueError, 'bad'", "mode = 0777", "n = 10L", "if a <> b:", "s = `x`", 'p = ur"\\d"',
])
def test_python2_lines(line):
    assert python2_source([line], 1, "SyntaxError: invalid syntax")


@pytest.mark.parametrize("line", ["x = (1,", "print(x", "def f(:", "y = a +", "except (A, B) as e"])
def test_python3_mistakes_are_not_python2(line):
    assert not python2_source([line], 1, "SyntaxError: invalid syntax")


def test_tab_mix_in_a_python2_file_is_python2_source():
    # a tab/space mix is legal in Python 2: CPython 3 stops there before it reaches the file's `print` statements
    tabbed = ["def f(x):", "    if x:", "\treturn 1", "    return 2", "", 'print "done"']
    msg = "TabError: inconsistent use of tabs and spaces in indentation"
    assert python2_source(tabbed, 3, msg)
    assert not python2_source(tabbed[:-1] + ['print("done")'], 3, msg)  # a Python 3 file: a real mistake
    assert not python2_source(tabbed, 3, "SyntaxError: invalid syntax")  # only the tab mix is Python 2's


def test_python2_message_decides():
    assert python2_source(["foo"], 1, "SyntaxError: Missing parentheses in call to 'print'. Did you mean print(...)?")


@pytest.mark.parametrize("lines,row", [
    (["x = # TODO"], 1),
    (["# YOUR CODE HERE", "preds ="], 2),
    (["model = load(<insert artifact ID here>)"], 1),
    (["generated_data = <gen(noise)>"], 1),
    (["submit_honor((generator, discriminator), <YOUR_EMAIL>, <YOUR_TOKEN>)"], 1),
    (["w = ___"], 1),
    (["_, loss = ########## TO DO ############"], 1),
    (["# labels.", "label_i = ", "pred_i ="], 2),
    (["### YOUR ACTION REQUIRED:", "# Create a second feature", "example.features.feature['adversaries']."], 3),
    (["# TODO 1b", "for w in pairs:", "    context_class = #TODO 1b: your code here"], 3),
    (["n = 1", "layer = # TODO 1 -- Your code goes here(", "    a=1,", "    b=2,", "    c=3)"], 5),
    # graded-assignment skeletons: `None` where the reader's names go, and the START/END CODE HERE region
    (["def None():"], 1),
    (["    x = layers.Dense(64, activation=??)(x)"], 1),
    (["model.compile(loss=??, optimizer='adam')"], 1),
    (["    def call(self, x):", "        return = raise NotImplementedError()"], 2),
    (["x = y = "], 1),
    (["# finish this", "model.add("], 2),
    (["    history = None.None(train_generator,"], 1),
    (["    encoder = label_encoder.None"], 1),
    (["### START CODE HERE", "", "# Instantiate the tokenizer", "tok = Tokenizer()", "", "", "", "", "",
      "model.add(,)", "### END CODE HERE"], 10),
    # a lone `?` where the reader puts a value (Machine Learning Crash Course exercises)
    (["epochs= ?   # Replace ? with an integer."], 1),
    (["pos = df[ ? ] # Replace the ? with a way to filter"], 1),
    (["METRICS = [", "      tf.keras.metrics.AUC(),", "      ?  # write code here", "]"], 3),
    # dots where the code goes (pkmital/CADL's homework notebooks, round 22)
    (["convolved = utils.convolve(..."], 1),
    (["X = tf.placeholder(name='X'..."], 1),
    (["net = .."], 1),
    (["optimizer = tf.train....minimize(cost)"], 1),
    (["... DO SOMETHING AWESOME ! ..."], 1),
    (["loss = utils.binary_cross_entropy(D_real, ..."], 1),
    (["with scope('real'):", "    loss = f(D_real, ...", "with scope('fake'):"], 3),
])
def test_exercise_blanks(lines, row):
    assert exercise_blank(lines, row)


def test_block_whose_body_is_a_todo():
    lines = ["with scope('pool1'):", "    # TO DO", "", "x = 1"]
    assert exercise_blank(lines, 4, "expected an indented block after 'with' statement on line 1")
    assert not exercise_blank(["with scope('pool1'):", "", "x = 1"], 3, "expected an indented block")
    far = ["with scope('conv1'):", "    # TO DO", "", "", "", "", "", "", "", "with scope('conv2'):"]
    assert exercise_blank(far, 10, "expected an indented block after 'with' statement on line 1")
    assert not exercise_blank(far, 10, "expected an indented block")


@pytest.mark.parametrize("lines,row", [
    (["x = (1,"], 1),
    (["y = a +"], 1),
    (["# TODO: speed this up later", "x = 1", "y = 2", "z = 3", "a = 4", "b = 5", "c = 6", "def f(:"], 8),  # too far
    (["if a < b and c > d:", "  x == (1,"], 2),
    # after the region closed, a syntax error is the file's own
    (["### START CODE HERE", "x = 1", "### END CODE HERE", "", "", "", "", "", "", "", "y = (1,"], 11),
    (["value = None", "y = (None,"], 2),
    (["x = (1, y??"], 1),  # IPython's help syntax, not a blank
    (["y = (x < 1) > (2"], 1),  # comparisons, not an angle-bracket placeholder
    (["x = y.", "z = 1"], 1),  # one dot is a typo
    (["x = [1, ...", "z = (2,"], 2),  # dots on another line than the error
])
def test_real_mistakes_are_not_blanks(lines, row):
    assert not exercise_blank(lines, row)


def test_not_a_mistake_names_the_reason():
    assert not_a_mistake(["print x"], 1, "SyntaxError: invalid syntax") == "Python 2 source"
    assert not_a_mistake(["x = # TODO"], 1, "SyntaxError: invalid syntax") == "an exercise blank"
    assert not_a_mistake(["x = (1,"], 1, "SyntaxError: '(' was never closed") is None


BIBTEX = ("@manual{Intro9, \n title={Advanced Model Training}, \n organization={DeepChem},\n"
          " howpublished = {\\url{https://github.com/deepchem/deepchem}}, \n year={2021}, \n} \n")


def test_a_citation_cell_is_not_a_mistake():
    raw = nb_json("import tensorflow as tf\n", BIBTEX, "# Citing\n@article{smith2020,\n  author = {Smith},\n}\n")
    assert findings(raw, select=("TFL001",)) == []
    # a decorator with a brace is still a mistake, and so is an entry's shape without fields
    raw = nb_json("import tensorflow as tf\n", "@tf.function{\ndef f(x):\n    return x\n", "@misc{key,\n}\nx = (1,\n")
    assert [f.cell for f in findings(raw, select=("TFL001",))] == [2, 3]


def test_a_file_ported_to_python3_keeps_its_print_statement_error():
    text = "from __future__ import print_function\nimport tensorflow as tf\nprint tf.zeros(3)\n"
    assert [f.code for f in tfl001(text)] == ["TFL001"]


def test_python_files():
    assert tfl001("import numpy as np\nx = np.zeros(3)\nprint x\n") == []
    assert tfl001("import tensorflow as tf\n_, loss = ########## TO DO ############\n") == []
    got = tfl001("import tensorflow as tf\nx = (1,\n")
    assert [f.code for f in got] == ["TFL001"]


def test_notebook_cells():
    raw = nb_json("import tensorflow as tf\n", "x = # TODO\n", "model = f(\n  # TODO: add layers\n  <insert layers here>\n)\n",
                  "y = (1,\n", "def fill(img):\n    # *** Add your solution here ***\n\nimg = load()\n")
    got = findings(raw, select=("TFL001",))
    assert [(f.cell, f.location.row) for f in got] == [(4, 1)]


def test_colab_cell_magic_after_comments():
    cell = "# Embed custom HTML directly into a cell's output.\n%%html\n<marquee>HTML rocks</marquee>\n"
    plain = json.loads(nb_json("import tensorflow as tf\n", cell))
    assert [f.cell for f in findings(json.dumps(plain), select=("TFL001",))] == [2]  # IPython rejects it
    plain["metadata"]["colab"] = {"provenance": []}
    assert findings(json.dumps(plain), select=("TFL001",)) == []  # Colab runs it


@pytest.mark.parametrize("raw", ["", "\n", "  \n"])
def test_empty_notebook_file(raw):
    assert findings(raw, select=("TFL001",)) == []


def test_an_indented_first_line_runs_in_colab_only():
    """IPython 7 and 8 (Colab ships 7.34; read from the ipython 7.34.0 and 8.18.1 wheels) remove the first line's
    indentation from each line that starts with it, so ` %%time` is a cell magic there and ` p = {` with its `}`
    at column 0 runs; IPython 9 (today's Jupyter) removes the common margin and rejects both. In a Colab notebook
    they are not syntax errors; elsewhere they are. A cell that runs under neither is one everywhere."""
    cells = ("import tensorflow as tf\n", " %%time\nx = 1\n", " p = {\n  'lr': 1,\n}\n", "  y = 1\n z = 2\n")
    raw = json.loads(nb_json(*cells))
    assert [f.cell for f in findings(json.dumps(raw), select=("TFL001",))] == [2, 3, 4]
    raw["metadata"]["colab"] = {}
    assert [f.cell for f in findings(json.dumps(raw), select=("TFL001",))] == [4]


def test_a_notebook_of_another_kernel_is_not_python():
    """A Swift for TensorFlow notebook whose metadata names the kernel (`swift`) but no language."""
    raw = json.loads(nb_json("import TensorFlow  // tensorflow for swift\nlet x = 1\nprint(x)\n"))
    raw["metadata"] = {"kernelspec": {"display_name": "Swift", "name": "swift"}}
    assert findings(json.dumps(raw), select=("TFL001",)) == []
    raw = json.loads(nb_json("import tensorflow as tf\nlet x = 1\n"))
    raw["metadata"] = {"kernelspec": {"display_name": "TF", "name": "conda-env-tf-py"}}
    assert [f.cell for f in findings(json.dumps(raw), select=("TFL001",))] == [1]


def test_r_code_under_a_python_kernelspec_is_not_python():
    """R notebooks whose metadata was copied from a Python one (`"name": "python3"`): several cells of R that no
    Python file holds (`library(...)`, `<- function(`, `paste0(`) make the notebook R; one such line does not."""
    r_cells = ("library(glue)\nsh <- function(cmd) {\n  system(cmd)\n}\n", "BUCKET <- paste0(\"gs://\", NAME)\n",
               "if (x == \"\") {\n  x <- 1\n}\n", "import tensorflow as tf\n")
    assert findings(nb_json(*r_cells), select=("TFL001",)) == []
    python = ("import tensorflow as tf\n", "# R would say: library(glue)\nx = (1,\n")
    assert [f.cell for f in findings(nb_json(*python), select=("TFL001",))] == [2]


def test_r_cells_in_a_python_notebook_are_not_mistakes():
    """TensorFlow Probability's notebooks hold R cells run after switching the Colab runtime to R."""
    r_cells = ["suppressMessages({\n  library('glmnet')\n  library('lme4')\n})\n",
               "data_dir <- '/tmp/glm'\nx <- as.matrix(read.csv(paste(data_dir, '/x.csv', sep='')))\n",
               "data = read_csv(gfile::GFile('/tmp/radon.csv'))\n",
               "ppc_dens_overlay(y = fit$y,\n                 yrep = posterior_predict(fit, draws = 50))\n",
               "write.csv(as.data.frame(ranef(fit, condVar = TRUE)), '/tmp/fit.csv')\n"]
    assert findings(nb_json("import tensorflow as tf\n", *r_cells), select=("TFL001",)) == []
    # Python with the same characters in strings or comments, or a slice, is still a mistake
    python = ["x = f('a <- b', \"fit$y\")  # data$county <- 1\ny = (1,\n", "z = a[1::2]\nw = [\n",
              "library = load()\nlibrary.add(\n"]
    got = findings(nb_json("import tensorflow as tf\n", *python), select=("TFL001",))
    assert [f.cell for f in got] == [2, 3, 4]
