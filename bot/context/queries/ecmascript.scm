; Shared by JavaScript and TypeScript (each adds its own file: class names differ in node type).
(function_declaration name: (identifier) @definition.function)
(generator_function_declaration name: (identifier) @definition.function)
(method_definition name: (property_identifier) @definition.method)
(variable_declarator name: (identifier) @definition.function value: [(arrow_function) (function_expression)])

(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
((call_expression function: (identifier) @_require arguments: (arguments (string (string_fragment) @import)))
  (#eq? @_require "require"))

(identifier) @reference
(property_identifier) @reference
(shorthand_property_identifier) @reference

(comment) @doc
(string) @doc
(template_string) @doc
