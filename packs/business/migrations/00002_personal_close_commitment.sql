-- personal.close_commitment came after the personal skill and was never added to it, so no agent could close a
-- commitment it had made (TestEveryToolIsInASkillOfItsPack found it). A database whose people removed the
-- built-in skill, or added the tool themselves, is left as it is.

-- +goose Up
UPDATE skills SET tools = array_append(tools, 'personal.close_commitment'), updated_at = now()
WHERE slug = 'personal' AND is_builtin AND NOT 'personal.close_commitment' = ANY (tools);

-- +goose Down
UPDATE skills SET tools = array_remove(tools, 'personal.close_commitment'), updated_at = now()
WHERE slug = 'personal' AND is_builtin;
