(function_declaration name: (identifier) @definition.function)
(method_declaration name: (field_identifier) @definition.method)
(type_spec name: (type_identifier) @definition.type)
(source_file (const_declaration (const_spec name: (identifier) @definition.constant)))

(import_spec path: (interpreted_string_literal) @import)

(identifier) @reference
(type_identifier) @reference
(field_identifier) @reference

(comment) @doc
(interpreted_string_literal) @doc
(raw_string_literal) @doc
