(class_declaration name: (identifier) @definition.class)
(interface_declaration name: (identifier) @definition.interface)
(enum_declaration name: (identifier) @definition.enum)
(record_declaration name: (identifier) @definition.class)
(annotation_type_declaration name: (identifier) @definition.interface)
(method_declaration name: (identifier) @definition.method)
(constructor_declaration name: (identifier) @definition.method)

(import_declaration (scoped_identifier) @import)

(identifier) @reference
(type_identifier) @reference

(line_comment) @doc
(block_comment) @doc
(string_literal) @doc
