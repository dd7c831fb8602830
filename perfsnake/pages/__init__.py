"""Report pages as data: a small document model (model.py) rendered to
Markdown (markdown.py) and to HTML (html.py, its page shell and styles in
templates/), so a page's writer builds its content once and every markup
shows the same thing."""
