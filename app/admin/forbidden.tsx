/** What a signed-in user who is not an admin sees on an admin page (403 in words). */
export function AdminForbidden() {
  return (
    <main className="admin">
      <section className="card" role="alert" data-testid="admin-forbidden">
        <h1>403 — administrators only</h1>
        <p>This page is for administrators. Your account does not have that role.</p>
      </section>
    </main>
  );
}
