// Render the server's own OpenAPI document (no inline script: the page's CSP allows none).
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  // Swagger UI's validator badge calls an outside service; the CSP would refuse it anyway.
  validatorUrl: null,
});
