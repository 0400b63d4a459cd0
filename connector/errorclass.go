package connector

// CallersMistake says whether a job that failed with this code failed for
// what its caller sent or owns (a URL that answers 404, bytes that are not
// an image, a wrong key, no credits left): the job's record tells the
// caller, and nothing is left for operators to look at. Every other
// failure (the compression API failing, Redis, a bug) is a system fault:
// the worker leaves its task in the queue's archive, and
// imgflow_jobs_system_failed_total counts it.
func (c ErrorCode) CallersMistake() bool {
	switch c {
	case EINVALID, EURLREFUSED, EFORMAT, EFETCH, EUNAUTHORIZED, ENOTFOUND, ETOOLARGE, EMEDIATYPE, ENOCREDITS, EMISMATCH:
		return true
	}
	return false
}
