; Definitions: @name is the defined name, @definition.<kind> the whole definition, @body what the signature stops before.
(class_declaration name: (_) @name body: (_) @body) @definition.class
(abstract_class_declaration name: (_) @name body: (_) @body) @definition.class
(function_declaration name: (identifier) @name body: (_) @body) @definition.function
(generator_function_declaration name: (identifier) @name body: (_) @body) @definition.function
(method_definition name: (_) @name body: (_) @body) @definition.method
(method_signature name: (_) @name) @definition.method
(abstract_method_signature name: (_) @name) @definition.method
(function_signature name: (identifier) @name) @definition.function
(interface_declaration name: (_) @name body: (_) @body) @definition.interface
(type_alias_declaration name: (_) @name) @definition.type
(enum_declaration name: (_) @name body: (_) @body) @definition.enum
(internal_module name: (_) @name body: (_) @body) @definition.module
(lexical_declaration
  (variable_declarator name: (identifier) @name value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)])) @definition.function
