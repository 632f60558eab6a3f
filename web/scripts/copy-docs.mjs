// Copies swagger-ui-dist into dist/docs so that /docs works offline (no CDN),
// pointed at the server's own OpenAPI document.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const from = join(here, '..', 'node_modules', 'swagger-ui-dist');
const to = join(here, '..', 'dist', 'docs');
mkdirSync(to, { recursive: true });
for (const f of ['swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-32x32.png', 'LICENSE']) {
  copyFileSync(join(from, f), join(to, f));
}
writeFileSync(join(to, 'index.html'), `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Roofline API</title>
  <link rel="icon" href="favicon-32x32.png">
  <link rel="stylesheet" href="swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({
      url: '/api/openapi.json',
      dom_id: '#swagger-ui',
      deepLinking: true,
      presets: [SwaggerUIBundle.presets.apis],
      layout: 'BaseLayout',
      validatorUrl: null,  // no badge from validator.swagger.io: nothing leaves this server
    });
  </script>
</body>
</html>
`);
console.log('docs: swagger-ui copied to', to);
