"""What a memory is, with no disk and no index.

Modules: `value` (the Memory value: fields, defaults, tolerant coercion, age
notes), `fields` (the writable fields: one spec for every interface),
`file_format` (parse one file's bytes; edit frontmatter touching only the keys
meant), `yaml_plain` (what PyYAML makes of a plain scalar, without
importing it), `markdown` (what is code, what is a link), `merge` (three-way merge of
one memory), `catalog` (MEMORY.md's text), `listing` (a memory's MEMORY.md entry read
the short way), `json_view` (a result's fields as JSON
prints them: camelCase keys, in order), `patterns` (regular expressions compiled at
their first use: a hook process pays only for those it runs).

May import only `sage_mem.errors` and each other: never the disk, the index,
the store or anything above them, so every other room can use it.
"""
