/** Rendered with status 403 when a page calls `forbidden()` (admin pages for non-admins). */
export default function Forbidden() {
  return (
    <main>
      <section className="card" role="alert" data-testid="admin-forbidden">
        <h1>403 — administrators only</h1>
        <p>This page is for administrators. Your account does not have that role.</p>
      </section>
    </main>
  );
}
