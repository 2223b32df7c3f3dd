; Definitions: @name is the defined name, @definition.<kind> the whole definition, @body what the signature stops before.
(function_declaration name: (identifier) @name body: (_) @body) @definition.function
(method_declaration name: (field_identifier) @name body: (_) @body) @definition.method
(type_declaration (type_spec name: (type_identifier) @name type: (_) @body)) @definition.type
