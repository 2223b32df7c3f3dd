; Definitions: @name is the defined name, @definition.<kind> the whole definition, @body what the signature stops before.
(class_definition name: (identifier) @name body: (_) @body) @definition.class
(function_definition name: (identifier) @name body: (_) @body) @definition.function
(module (expression_statement (assignment left: (identifier) @name) @definition.constant))
