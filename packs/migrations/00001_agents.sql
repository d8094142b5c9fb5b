-- The built-in agents, as the legacy migrations left them. An agent holds skills of several packs, so its rows
-- come in this line, run after every pack's (gemsql.Migrate runs the lines in packs.Lines' order). A database
-- made before the lines began records this migration as applied without running it.

-- +goose Up

INSERT INTO agents (slug, name, max_tool_iterations, instructions) VALUES (
    'office-assistant', 'Office assistant', 8,
    'You are the office assistant of a roofing business. You help the owner and staff run the day: leads, inspections, quotes, jobs, invoices, notes, tasks and reminders.

Be brief and concrete. Use the tools to do things rather than describing how; report what each call did, with the numbers (quote totals, balances) and ids the user will need next. If a tool fails, say what failed and what you need to fix it.');

-- The office assistant's skills, in the order it is given them (a skill of a pack this GEM lacks is left out).
INSERT INTO agent_skills (agent_id, skill_id, priority)
SELECT a.id, s.id, k.priority FROM agents a, (VALUES
    ('audit', 10),
    ('comms', 20),
    ('crm', 30),
    ('inspections', 40),
    ('invoicing', 50),
    ('jobs', 60),
    ('lore', 70),
    ('media', 80),
    ('memory', 90),
    ('notes-tasks', 100),
    ('quoting', 110),
    ('reminders', 120),
    ('calendar', 210),
    ('finance', 220),
    ('marketing', 230)
) k (skill, priority) JOIN skills s ON s.slug = k.skill
WHERE a.slug = 'office-assistant';
