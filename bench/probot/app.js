// The Probot 14 app bench/webhook_ack.py loads: it handles issues.labeled and stores nothing.
export default (app) => {
  app.on("issues.labeled", async () => {});
};
