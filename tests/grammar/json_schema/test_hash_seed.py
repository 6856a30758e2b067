"""The grammar of a schema does not depend on the process's string-hash seed.

Compiled grammars are cached and serialized by their text, and two servers given one schema
must build the same grammar.  Candidates of an ``enum`` met in several subschemas at one
location (here an ``if``/``then`` on an enum property) were once taken from whichever
subschema a frozenset yielded first, so their order changed with ``PYTHONHASHSEED``.
"""

import os
import subprocess
import sys

from conftest import require_data

CODE = """
import json, sys, xmask
schema = json.load(open(sys.argv[1]))["schema"]
print(xmask.Grammar.from_json_schema(schema, strict_mode=False))
"""


def test_schema_grammar_is_the_same_under_every_hash_seed():
    # (ui5.yaml: specVersion's enum, narrowed by if/then with enums of their own)
    path = require_data("maskbench", "JsonSchemaStore---ui5.yaml.json")
    texts = set()
    for seed in ("1", "2", "3", "4", "5"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", CODE, str(path)], env=env, capture_output=True,
                             text=True, check=True)
        texts.add(out.stdout)
    assert len(texts) == 1
    assert '"3.1' in texts.pop()
