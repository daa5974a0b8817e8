package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ndbench/ndbench/driver"
)

// Classify maps an error of the SDK (or of a DAX client) to a driver class: by the
// service's error code when there is one, then by HTTP status, then by the generic rules
// (deadlines, refused connections).
func Classify(err error) driver.Class {
	if err == nil {
		return driver.ClassOther
	}
	var de *driver.Error
	if errors.As(err, &de) {
		return de.Class
	}
	// A deadline first: the SDK reports one that expired while it waited for an answer
	// as a failed send, which would read as unavailable.
	if errors.Is(err, context.DeadlineExceeded) {
		return driver.ClassTimeout
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		return classifyCancellation(tce.CancellationReasons)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if c, ok := classifyCode(ae.ErrorCode()); ok {
			return c
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		switch s := re.HTTPStatusCode(); {
		case s == 429:
			return driver.ClassThrottled
		case s >= 500:
			return driver.ClassUnavailable
		case s >= 400:
			return driver.ClassRejected
		}
	}
	if c := driver.Classify(err); c != driver.ClassOther {
		return c
	}
	// aws-dax-go-v2 reports a cluster none of whose nodes answers as a bare string (the
	// dial error flattened into it): "operation error dax: GetItem, no routes found.
	// lastRefreshError: ... connection refused".
	var oe *smithy.OperationError
	if errors.As(err, &oe) && oe.ServiceID == "dax" && oe.Err != nil && strings.Contains(oe.Err.Error(), "no routes found") {
		return driver.ClassUnavailable
	}
	// The request never got an answer: no connection, or one that broke.
	var se *smithyhttp.RequestSendError
	if errors.As(err, &se) {
		return driver.ClassUnavailable
	}
	return driver.ClassOther
}

// classifyCancellation classifies a cancelled transaction by its reasons: one cancelled
// by throttling or by a conflicting transaction can succeed later (throttled); one whose
// item failed a condition or validation cannot (rejected).
func classifyCancellation(reasons []types.CancellationReason) driver.Class {
	for _, r := range reasons {
		switch aws.ToString(r.Code) {
		case "ThrottlingError", "ProvisionedThroughputExceeded", "TransactionConflict":
			return driver.ClassThrottled
		}
	}
	return driver.ClassRejected
}

// classifyCode maps DynamoDB's and DAX's error codes.
func classifyCode(code string) (driver.Class, bool) {
	switch code {
	case "ProvisionedThroughputExceededException", "RequestLimitExceeded", "ThrottlingException",
		"Throttling", "TooManyRequestsException", "LimitExceededException",
		// Contention on the same items: safe to retry later, like a throttled request.
		"TransactionConflictException", "TransactionInProgressException":
		return driver.ClassThrottled, true
	case "InternalServerError", "InternalFailure", "ServiceUnavailable", "ServiceUnavailableException":
		return driver.ClassUnavailable, true
	case "ResponseTimeout", "RequestTimeout", "RequestTimeoutException":
		return driver.ClassTimeout, true
	case "ValidationException", "ResourceNotFoundException", "ResourceInUseException",
		"ConditionalCheckFailedException", "SerializationException", "ItemCollectionSizeLimitExceededException",
		"TransactionCanceledException", "IdempotentParameterMismatchException",
		"AccessDeniedException", "UnrecognizedClientException", "InvalidSignatureException",
		"MissingAuthenticationToken", "MissingAuthenticationTokenException", "IncompleteSignature",
		"IncompleteSignatureException", "ExpiredTokenException", "InvalidParameter", "NotImplemented":
		return driver.ClassRejected, true
	}
	return driver.ClassOther, false
}

// fail classifies err and prefixes what was being done, scrubbing the credentials in case
// a service message quoted them (a signature mismatch may echo the access key ID).
func (d *Driver) fail(what string, err error) error {
	if errors.Is(err, errClosed) {
		return driver.Wrap(driver.ClassOther, err)
	}
	class := Classify(err)
	msg := what + ": " + err.Error()
	if scrubbed := scrub(msg, d.secrets); scrubbed != msg {
		return driver.Wrap(class, errors.New(scrubbed))
	}
	return driver.Wrap(class, fmt.Errorf("%s: %w", what, err))
}

// scrub replaces every secret in s.
func scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" && strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, driver.CredentialMask)
		}
	}
	return s
}
