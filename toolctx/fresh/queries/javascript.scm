; Definitions: @name is the defined name, @definition.<kind> the whole definition, @body what the signature stops before.
(class_declaration name: (_) @name body: (_) @body) @definition.class
(function_declaration name: (identifier) @name body: (_) @body) @definition.function
(generator_function_declaration name: (identifier) @name body: (_) @body) @definition.function
(method_definition name: (_) @name body: (_) @body) @definition.method
(lexical_declaration
  (variable_declarator name: (identifier) @name value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)])) @definition.function
(variable_declaration
  (variable_declarator name: (identifier) @name value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)])) @definition.function
