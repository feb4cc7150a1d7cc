"""One home per task: everything particular to classify, qa, embed, corefs and mlm.

The rooms below (io, view, infer, eval, train) hold the machinery every task shares: reading,
windowing, the batch runner, the one training loop, the metrics' arithmetic. A task's home
holds what only it has (its window policy and options, how a window's output becomes a row,
how window rows join into the document's, its training task, its metric glue) in a TaskSpec,
`SPEC`, which this package registers in `lfcli.pipelines.registry`, where the runner, the
trainer, the evaluator, the Ray engine and the CLI look it up by name. A new task: a new home
here and one line below (docs/architecture.md).
"""

from ..registry import register
from . import classify, corefs, embed, mlm, qa

# In the order messages list them.
for _home in (classify, qa, embed, corefs, mlm):
    register(_home.SPEC)
