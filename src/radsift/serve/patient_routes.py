"""Patient endpoints of the web service: ``GET /api/timeline/{patient}``, a patient's reports in date order
with each finding's status per report (:func:`radsift.search.timeline.store_timeline`, the function behind
``radsift timeline``).

The patient id is checked by the input policy (:func:`radsift.search.query.check_patient`: 1 to 200
characters, no control character; 422 naming it). An index that names no patients is a 422 saying so;
a patient it does not name is a 404. Each answer is an audit line (the patient and the report ids shown,
never report text) written before it is sent: no line, no answer (503).
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request

from radsift.search.timeline import UnknownPatientError, store_timeline
from radsift.serve.audit import id_summary
from radsift.serve.params import only_params
from radsift.serve.service import Service, api_router


def patient_router(service: Service) -> APIRouter:
    """``GET /timeline/{patient}`` over ``service``."""
    router = api_router(service)

    @router.get("/timeline/{patient:path}", dependencies=[only_params(frozenset())],
                responses={404: {"description": "No report of that patient in the index."},
                           422: {"description": "A patient id the input policy refuses, or an index without "
                                                "patients."}})
    def timeline(request: Request, patient: str) -> dict:
        """A patient's reports, oldest first (undated last), each with its findings' status and the sentence
        deciding it (``present``, ``uncertain``, ``absent``; a finding not listed is not mentioned)."""
        store = service.index.live_store()
        try:
            with store.guard():
                entries = store_timeline(store, patient, where="this index")
        except UnknownPatientError as exc:
            service.audit_write(request, "timeline", query=patient.strip(), found=False, **id_summary([], "result_ids"))
            raise HTTPException(404, str(exc)) from None
        ids = [e.report_id for e in entries]
        service.audit_write(request, "timeline", query=entries[0].patient, found=True, **id_summary(ids, "result_ids"))
        findings = sorted({f for e in entries for f in e.findings})
        return {"patient": entries[0].patient, "count": len(entries), "findings": findings,
                "reports": [e.to_dict() for e in entries]}

    return router
