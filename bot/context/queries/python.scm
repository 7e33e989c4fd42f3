; Definitions: the capture sits on the name; its parent node gives the line range.
(class_definition name: (identifier) @definition.class)
(function_definition name: (identifier) @definition.function)
(module (expression_statement (assignment left: (identifier) @definition.constant)))

(import_statement name: (dotted_name) @import)
(import_statement name: (aliased_import name: (dotted_name) @import))
(import_from_statement module_name: (_) @import)
(import_from_statement name: (dotted_name) @import.member)
(import_from_statement name: (aliased_import name: (dotted_name) @import.member))

(identifier) @reference

(string) @doc
(comment) @doc
